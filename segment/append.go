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
// Committer's Flush covers it. Errors: ErrEmptySegment, ErrTooLarge, ErrClosed,
// or the I/O error. A failed write is cut back to the file's previous end,
// so the log stays usable and the Append may be retried (ENOSPC is an error,
// not a state); when the cut fails too, the file may end in a partial
// segment and the log is failed until reopened (ErrWriteFailed, sticky like
// ErrSyncFailed): it never appends after garbage. A failed rotation sync is
// sticky (ErrSyncFailed).
//
// Not safe for concurrent use with itself, AppendTo, AppendSegment,
// DeleteFilesBefore or Close.
func (l *Log) Append(tsMicros int64, recs []Record) (firstOffset uint64, err error) {
	firstOffset, _, err = l.appendRecords(tsMicros, recs, nil, false)
	return firstOffset, err
}

// AppendTo is Append that also appends to dst a copy of the segment it
// wrote, byte for byte as in the file (the 48-byte header and the stored,
// maybe compressed, record block), and returns the extended slice: what a
// commit log keeps so that AppendSegment can write the same segment again
// after a crash (issue 14). It costs one copy of the segment; nothing is
// encoded or compressed twice.
//
// Durability and errors are Append's. When the segment did not reach the
// file, out is dst unchanged and firstOffset is 0. When it did and only the
// segment index (a cache) failed to take its entry, the error says so and
// firstOffset and out are still set: the segment is in the file, so the
// caller must keep it like any other (it is part of the log from now on).
//
// Not safe for concurrent use with itself, Append, AppendSegment,
// DeleteFilesBefore or Close.
func (l *Log) AppendTo(dst []byte, tsMicros int64, recs []Record) (firstOffset uint64, out []byte, err error) {
	return l.appendRecords(tsMicros, recs, dst, true)
}

// appendRecords is Append and AppendTo: it encodes recs into a pooled
// buffer, writes and publishes the segment, and, with copyOut, appends the
// segment's bytes to dst.
func (l *Log) appendRecords(tsMicros int64, recs []Record, dst []byte, copyOut bool) (uint64, []byte, error) {
	if len(recs) == 0 {
		return 0, dst, ErrEmptySegment
	}
	if err := l.writable(); err != nil {
		return 0, dst, err
	}
	if err := l.pin(); err != nil {
		return 0, dst, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	if tsMicros < l.lastTs {
		tsMicros = l.lastTs
	}
	if uint64(len(recs)) > 1<<31 {
		return 0, dst, ErrTooLarge
	}
	rawLen := 0
	for i := range recs {
		n := recordBodyLen(&recs[i])
		rawLen += uvarintLen(uint64(n)) + n
	}
	if rawLen > MaxSegmentBytes {
		return 0, dst, fmt.Errorf("segment log %s: %d bytes of records: %w", l.dir, rawLen, ErrTooLarge)
	}
	if err := l.maybeRotate(tsMicros); err != nil {
		return 0, dst, fmt.Errorf("segment log %s: rotate: %w", l.dir, err)
	}

	wb := writeBufs.Get().(*writeBuf)
	defer wb.put()
	h := header{codec: CodecNone, base: l.next, count: uint32(len(recs)), rawLen: uint32(rawLen), tsMicros: tsMicros}
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

	written, err := l.writeSegment(out, h)
	if written && copyOut {
		dst = append(dst, out...)
	}
	if !written {
		return 0, dst, err
	}
	l.dedupAppend(h.base, recs)
	return h.base, dst, err
}

// put returns wb to the pool unless one huge append grew it.
func (wb *writeBuf) put() {
	if cap(wb.raw) <= maxPooledBuf && cap(wb.out) <= maxPooledBuf {
		writeBufs.Put(wb)
	}
}

// writable returns why the Log cannot be appended to, or nil.
func (l *Log) writable() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.failed()
}

// writeSegment writes the whole segment seg (header h, checksum set) at the
// end of the active file and publishes it: index entry, file size, next
// offset, timestamps, the append count a Sync covers. The caller has pinned
// the Log and rotated. written reports that the segment is in the file; err
// is then only the index's (a cache: the segment is published, and recovery
// rebuilds the entry). A failed write is cut back to the previous end (see
// Append).
func (l *Log) writeSegment(seg []byte, h header) (written bool, err error) {
	act := l.active
	fi := act.info
	if _, err := act.seg.Write(seg); err != nil {
		err = fmt.Errorf("segment log %s: append at offset %d (byte %d of %s): %w", l.dir, h.base, fi.size, segName(fi.base), err)
		// Cut any partial write so the next segment starts on a boundary.
		if terr := act.seg.Truncate(fi.size); terr != nil {
			return false, l.fail(ErrWriteFailed, errors.Join(err, fmt.Errorf("cut back to byte %d: %w", fi.size, terr)))
		}
		return false, err
	}

	l.mu.Lock()
	err = act.idx.Append(index.Entry{Base: h.base, Pos: fi.size, TimestampMicros: h.tsMicros, Count: h.count})
	if err == nil && fi.heap != nil && lazyIndexDue(act.idx.Len(), fi.size+int64(len(seg))) {
		// The in-memory index is due for its file. A failure keeps it in
		// memory (it is a cache); the next append tries again.
		_ = l.writeIndexLocked(act)
	}
	if fi.next == fi.base {
		fi.firstTs = h.tsMicros
	}
	fi.size += int64(len(seg))
	if l.unsyncedFrom == 0 {
		l.unsyncedFrom = h.base
	}
	fi.next += uint64(h.count)
	fi.lastTs = h.tsMicros
	l.next = fi.next
	l.lastTs = h.tsMicros
	l.mu.Unlock()
	l.appendSeq.Add(1)
	if err != nil {
		// The segment is on disk; only the cache failed. Recovery rebuilds it.
		return true, fmt.Errorf("segment log %s: index: %w", l.dir, err)
	}
	return true, nil
}
