package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/combmq/comb/index"
)

// writeBuf is the scratch one Append builds its segment in: raw holds the
// record block, out the header plus the stored (maybe compressed) block.
// Pooled across Logs so an idle Log holds no buffer.
type writeBuf struct{ raw, out []byte }

var writeBufs = sync.Pool{New: func() any { return new(writeBuf) }}

// maxPooledBuf keeps one huge append from pinning its buffer in the pool.
const maxPooledBuf = 4 << 20

// Append writes recs as one segment stamped tsMicros (µs since the Unix
// epoch; every record of the segment shares it, seed 000: createdAt is the
// segment timestamp) and returns the offset of its first record. Offsets are
// dense: the records get firstOffset, firstOffset+1, ...
//
// Timestamps never go backwards along a log: a tsMicros below LastTimestamp()
// is stored as LastTimestamp(), so the time index stays sorted. Callers that
// report createdAt should take max(now, LastTimestamp()) themselves.
//
// Durability: the segment is written to the file (one write call) but NOT
// synced; it survives a process crash, not a power loss, until Sync or a
// Committer pass covers it. Errors: ErrEmptySegment, ErrTooLarge, ErrClosed,
// or the I/O error. A failed write is cut back to the file's previous end,
// so the log stays usable and the Append may be retried (ENOSPC is an error,
// not a state); when the cut fails too, the file may end in a partial
// segment and the log is failed until reopened (ErrWriteFailed, sticky like
// ErrSyncFailed): it never appends after garbage. A failed rotation sync is
// sticky (ErrSyncFailed).
//
// Not safe for concurrent use with itself, DeleteFilesBefore or Close.
func (l *Log) Append(tsMicros int64, recs []Record) (firstOffset uint64, err error) {
	if len(recs) == 0 {
		return 0, ErrEmptySegment
	}
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if err := l.failed(); err != nil {
		return 0, err
	}
	if err := l.pin(); err != nil {
		return 0, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	if tsMicros < l.lastTs {
		tsMicros = l.lastTs
	}
	if err := l.maybeRotate(tsMicros); err != nil {
		return 0, fmt.Errorf("segment log %s: rotate: %w", l.dir, err)
	}

	wb := writeBufs.Get().(*writeBuf)
	defer func() {
		if cap(wb.raw) <= maxPooledBuf && cap(wb.out) <= maxPooledBuf {
			writeBufs.Put(wb)
		}
	}()

	base := l.next
	h := header{codec: CodecNone, base: base, count: uint32(len(recs)), tsMicros: tsMicros}
	if uint64(len(recs)) > 1<<31 {
		return 0, ErrTooLarge
	}
	rawLen := 0
	for i := range recs {
		n := recordBodyLen(&recs[i])
		rawLen += uvarintLen(uint64(n)) + n
	}
	if rawLen > MaxSegmentBytes {
		return 0, fmt.Errorf("segment log %s: %d bytes of records: %w", l.dir, rawLen, ErrTooLarge)
	}
	h.rawLen = uint32(rawLen)

	codec := l.opts.Codec
	if codec != CodecNone && rawLen < l.opts.MinCompressBytes {
		codec = CodecNone
	}
	var out []byte
	if codec == CodecNone {
		out = grow(wb.out[:0], HeaderSize+rawLen)[:HeaderSize]
		for i := range recs {
			out = appendRecord(out, &recs[i])
		}
	} else {
		raw := grow(wb.raw[:0], rawLen)
		for i := range recs {
			raw = appendRecord(raw, &recs[i])
		}
		wb.raw = raw
		out = compress(grow(wb.out[:0], HeaderSize+rawLen)[:HeaderSize], raw, codec)
		if len(out)-HeaderSize >= rawLen {
			// Did not shrink: store it plain.
			codec, out = CodecNone, append(out[:HeaderSize], raw...)
		}
	}
	wb.out = out
	h.codec = codec
	h.storedLen = uint32(len(out) - HeaderSize)
	putHeader(out, h)
	binary.LittleEndian.PutUint64(out[40:], checksum(out, out[HeaderSize:]))

	act := l.active
	fi := act.info
	if _, err := act.seg.Write(out); err != nil {
		err = fmt.Errorf("segment log %s: append at offset %d (byte %d of %s): %w", l.dir, base, fi.size, segName(fi.base), err)
		// Cut any partial write so the next segment starts on a boundary.
		if terr := act.seg.Truncate(fi.size); terr != nil {
			return 0, l.fail(ErrWriteFailed, errors.Join(err, fmt.Errorf("cut back to byte %d: %w", fi.size, terr)))
		}
		return 0, err
	}

	l.mu.Lock()
	err = act.idx.Append(index.Entry{Base: base, Pos: fi.size, TimestampMicros: tsMicros, Count: h.count})
	if err == nil && fi.heap != nil && lazyIndexDue(act.idx.Len(), fi.size+int64(len(out))) {
		// The in-memory index is due for its file. A failure keeps it in
		// memory (it is a cache); the next append tries again.
		_ = l.writeIndexLocked(act)
	}
	if fi.next == fi.base {
		fi.firstTs = tsMicros
	}
	fi.size += int64(len(out))
	fi.next += uint64(len(recs))
	fi.lastTs = tsMicros
	l.next = fi.next
	l.lastTs = tsMicros
	l.mu.Unlock()
	l.appendSeq.Add(1)
	if err != nil {
		// The segment is on disk; only the cache failed. Recovery rebuilds it.
		return base, fmt.Errorf("segment log %s: index: %w", l.dir, err)
	}
	l.dedupAppend(base, recs)
	return base, nil
}

// maybeRotate starts a new active file when there is none, or when the
// active one has reached MaxFileBytes or spans MaxFileAge of segment
// timestamps. The old file is fdatasynced (and the directory, if it has an
// unsynced entry) before the new file exists, whatever the sync policy: a
// crash can then only tear the newest file, never leave a gap between files.
// That is one sync per MaxFileBytes of data.
func (l *Log) maybeRotate(tsMicros int64) error {
	old := l.active
	if old != nil {
		fi := old.info
		if fi.next == fi.base {
			return nil // empty: keep filling it
		}
		full := fi.size >= l.opts.MaxFileBytes
		aged := l.opts.MaxFileAge > 0 && tsMicros-fi.firstTs >= l.opts.MaxFileAge.Microseconds()
		if !full && !aged {
			return nil
		}
		if err := old.seg.Sync(); err != nil {
			// As in Sync: the pages of a failed fdatasync may be gone.
			return l.fail(ErrSyncFailed, fmt.Errorf("sync %s before rotation: %w", segName(fi.base), err))
		}
		if fi.heap != nil {
			// A sealed file always has its index file (Open checks sealed
			// files against it with one header read).
			l.mu.Lock()
			err := l.writeIndexLocked(old)
			l.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.needDirSync {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.failLocked(ErrSyncFailed, fmt.Errorf("sync directory before rotation: %w", err))
		}
		l.needDirSync = false
	}
	fi := &fileInfo{base: l.next, next: l.next}
	seg, err := openAppend(l.fs, join(l.dir, segName(fi.base)), true)
	if err != nil {
		return err
	}
	if err := seg.Truncate(0); err != nil { // a leftover of a crashed rotation holds nothing we keep
		_ = seg.Close()
		return err
	}
	// The index starts in memory (lazyindex.go): no second file per new
	// segment file until it has LazyIndexSegments segments or is sealed.
	// A stale index file of that name (a crashed rotation of an older
	// version) is checked against the segments by Open like any other.
	fi.heap = &heapBacking{}
	idx, _, err := index.Load(fi.heap, fi.base)
	if err != nil {
		_ = seg.Close()
		return err
	}
	of := &openFile{info: fi, seg: seg, idx: idx}
	of.refs.Store(1)
	l.needDirSync = true
	l.mu.Lock()
	l.files = append(l.files, fi)
	l.active = of
	l.mu.Unlock()
	if old != nil {
		// No reader holds old: readers hold mu shared for as long as they use
		// a file, and from now on reach this one through the sealed cache.
		// No Sync holds it either: Sync runs under syncMu.
		old.close(true)
	} else {
		l.cache.adjust(l, 2) // the first active file since Open or a load
	}
	return nil
}
