package segment

import (
	"fmt"
	"io"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
)

// openFileInfo opens fi's segment file and index and makes them agree. With
// fill set (Open, before the Log is shared) it stores what it found in fi
// (size, next, timestamps); readers opening a sealed file leave fi alone.
//
// Index entries are trusted back to the last one whose segment header on disk
// matches it (with tail set, that segment's checksum must verify too); later
// entries are dropped. Segments after that point are scanned, verified and
// indexed. A bad segment found by the scan is a torn tail when tail is set
// (the file is truncated there and rep says what was cut) and a
// *CorruptionError otherwise.
//
// active says fi is the newest file: without an index file it gets an
// in-memory index (lazyindex.go), written to its file only once it is due.
// Reopening a released log's active file (active, !fill) with its in-memory
// index current costs one open: no stat, no mapping, no read.
func (l *Log) openFileInfo(fi *fileInfo, tail, fill, active bool, rep *RecoveryReport) (*openFile, error) {
	segPath := join(l.dir, segName(fi.base))
	idxPath := join(l.dir, idxName(fi.base))
	seg, err := openAppend(l.fs, segPath, false)
	if err != nil {
		return nil, err
	}
	inMemory := active && !fi.idxOnDisk
	var back index.Backing
	if inMemory {
		if fi.heap == nil {
			fi.heap = &heapBacking{}
		}
		back = fi.heap
	} else if back, err = l.fs.OpenMapped(idxPath); err != nil {
		_ = seg.Close()
		return nil, err
	}
	idx, changed, err := index.Load(back, fi.base)
	if err != nil {
		_ = back.Close()
		_ = seg.Close()
		return nil, fmt.Errorf("index %s: %w", idxPath, err)
	}
	of := &openFile{info: fi, seg: seg, idx: idx}
	if inMemory {
		changed = false // nothing on disk was rebuilt
		if !fill && indexCovers(idx, fi) {
			// Everything Append published is in the entries, and every
			// segment read is checksum-verified anyway.
			return of, nil
		}
	}
	size, err := seg.Size()
	if err != nil {
		_ = idx.Close(false)
		_ = seg.Close()
		return nil, err
	}
	sc := scanner{f: seg, size: size}

	// Walk back to the last entry that matches the file.
	pos, next, lastTs := int64(0), fi.base, int64(0)
	k := idx.Len()
	for ; k > 0; k-- {
		e := idx.Entries().At(k - 1)
		h, err := sc.header(e.Pos)
		if err != nil || h.base != e.Base || h.count != e.Count || h.tsMicros != e.TimestampMicros {
			continue
		}
		if tail {
			if _, err := sc.segment(e.Pos, h); err != nil {
				continue
			}
		}
		pos, next, lastTs = e.Pos+h.size(), h.last()+1, h.tsMicros
		break
	}
	if k < idx.Len() {
		idx.Truncate(k)
		changed = true
	}

	// Scan, verify and index whatever follows.
	for pos < size {
		h, err := sc.header(pos)
		if err == nil && h.base != next {
			err = fmt.Errorf("segment base offset %d, expected %d", h.base, next)
		}
		if err == nil && h.tsMicros < lastTs {
			err = fmt.Errorf("segment timestamp %d before the previous %d", h.tsMicros, lastTs)
		}
		if err == nil {
			_, err = sc.segment(pos, h)
		}
		if err != nil {
			cut := &CorruptionError{File: segPath, StartByte: pos, EndByte: size, Reason: err.Error()}
			cut.FirstOffset, cut.LastOffset = sc.lostOffsets(pos, next)
			if tail && wholeSegmentFollows(seg, pos, size, cut) {
				// Whole segments after the damage were acknowledged once:
				// cutting here would drop them. Not a torn write.
				tail = false
			}
			if !tail {
				_ = idx.Close(false)
				_ = seg.Close()
				return nil, cut
			}
			// Keep what the cut drops: a full-length segment that fails
			// its checksum may be media damage to an acknowledged append,
			// not only a torn write (docs/format.md section 5 rule 2).
			kind := tailKind(&sc, pos)
			cut.Tail = kind
			keptAt, kerr := l.keepCut(seg, segName(fi.base), pos, size)
			if kerr != nil {
				_ = idx.Close(false)
				_ = seg.Close()
				return nil, fmt.Errorf("torn tail of %s at byte %d: keep the %d bytes before cutting them: %w", segPath, pos, size-pos, kerr)
			}
			if keptAt == "" {
				kind = record.TailZeros
			}
			if err := seg.Truncate(pos); err != nil {
				_ = idx.Close(false)
				_ = seg.Close()
				return nil, fmt.Errorf("truncate torn tail of %s at %d: %w", segPath, pos, err)
			}
			// The cut must be durable before anything is appended after it,
			// or a crash could bring back the old tail behind new segments.
			if err := seg.Sync(); err != nil {
				_ = idx.Close(false)
				_ = seg.Close()
				return nil, err
			}
			if rep != nil {
				rep.File, rep.TruncatedBytes, rep.TruncatedAt = segPath, size-pos, pos
				rep.LostFirstOffset, rep.LostLastOffset = cut.FirstOffset, cut.LastOffset
				rep.Tail, rep.KeptAt = kind, keptAt
			}
			size = pos
			break
		}
		if err := idx.Append(index.Entry{Base: h.base, Pos: pos, TimestampMicros: h.tsMicros, Count: h.count}); err != nil {
			_ = idx.Close(false)
			_ = seg.Close()
			return nil, err
		}
		changed = changed || !inMemory
		pos, next, lastTs = pos+h.size(), h.last()+1, h.tsMicros
	}
	if inMemory && lazyIndexDue(idx.Len(), pos) {
		if err := l.writeIndexLocked(of); err == nil {
			changed = true
		}
	}

	if fill {
		fi.size, fi.next = pos, next
		fi.firstTs, fi.lastTs = 0, 0
		if n := idx.Len(); n > 0 {
			fi.firstTs = idx.Entries().At(0).TimestampMicros
			fi.lastTs = idx.Entries().At(n - 1).TimestampMicros
		}
	}
	if changed && rep != nil {
		rep.IndexesRebuilt = append(rep.IndexesRebuilt, idxPath)
	}
	return of, nil
}

// indexCovers reports whether idx ends where fi's published segments end.
func indexCovers(idx *index.File, fi *fileInfo) bool {
	if e, ok := idx.Last(); ok {
		return e.Last()+1 == fi.next && e.Pos < fi.size
	}
	return fi.next == fi.base
}

// wholeSegmentFollows reports whether a segment whose checksum verifies
// starts at or after the damage at pos: either the segment at pos is whole
// but out of order (wrong base offset or timestamp), or the resync scan Verify
// uses finds one later. It runs only once damage is found, so a clean Open
// never pays for it. ce is narrowed to the damaged range: [pos, next good
// segment), or the out-of-order segment itself, with the offsets in between
// where the headers say.
func wholeSegmentFollows(f io.ReaderAt, pos, size int64, ce *CorruptionError) bool {
	end := resync(f, pos, size)
	if end >= size {
		return false
	}
	ce.Tail = record.TailCorrupt
	sc := scanner{f: f, size: size}
	h, err := sc.header(end)
	if err != nil {
		return true // resync read it a moment ago; keep the wide range
	}
	if end == pos {
		ce.EndByte, ce.FirstOffset, ce.LastOffset = pos+h.size(), h.base, h.last()
		ce.Reason += " (a whole segment, out of order)"
		return true
	}
	ce.EndByte = end
	ce.Reason += fmt.Sprintf("; a whole segment follows at byte %d, so this is damage to written data, not a torn tail", end)
	if ce.FirstOffset != 0 && h.base > ce.FirstOffset {
		ce.LastOffset = h.base - 1
	}
	return true
}

// scanner reads segments of one file for recovery and verification.
type scanner struct {
	f    io.ReaderAt
	size int64
	buf  []byte
}

// header reads and parses the segment header at pos.
func (s *scanner) header(pos int64) (header, error) {
	if pos < 0 || pos+HeaderSize > s.size {
		return header{}, fmt.Errorf("partial header (%d of %d bytes)", max(0, s.size-pos), HeaderSize)
	}
	var b [HeaderSize]byte
	if _, err := s.f.ReadAt(b[:], pos); err != nil {
		return header{}, err
	}
	h, err := parseHeader(b[:])
	if err == nil && pos+h.size() > s.size {
		err = fmt.Errorf("short segment (%d of %d bytes)", s.size-pos, h.size())
	}
	return h, err
}

// segment reads and verifies the whole segment at pos (header h).
func (s *scanner) segment(pos int64, h header) ([]byte, error) {
	n := int(h.size())
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := s.f.ReadAt(b, pos); err != nil {
		return nil, err
	}
	return b, verify(h, b)
}

// lostOffsets guesses which offsets a damaged tail starting at pos held by
// following the headers that still parse; first is always next.
func (s *scanner) lostOffsets(pos int64, next uint64) (first, last uint64) {
	if pos >= s.size {
		return 0, 0
	}
	last = next - 1
	var b [HeaderSize]byte
	for pos+HeaderSize <= s.size {
		if _, err := s.f.ReadAt(b[:], pos); err != nil {
			break
		}
		h, err := parseHeader(b[:]) // a short segment still names its offsets
		if err != nil || h.base != last+1 {
			break
		}
		last, pos = h.last(), pos+h.size()
	}
	if last < next {
		return next, next // the first lost offset is known, how many is not
	}
	return next, last
}

// tailKind says what the damaged tail at pos is (sc.size is the file size):
// record.TailTorn when it is an incomplete segment (a partial header, or a
// header whose length runs past the end: an append that never finished),
// record.TailDamaged when it is a segment of full length that fails its
// checksum or a header that does not parse (a torn write, or damage to an
// acknowledged segment).
func tailKind(sc *scanner, pos int64) record.Tail {
	if sc.size-pos < HeaderSize {
		return record.TailTorn
	}
	var b [HeaderSize]byte
	if _, err := sc.f.ReadAt(b[:], pos); err != nil {
		return record.TailDamaged
	}
	if h, err := parseHeader(b[:]); err == nil && pos+h.size() > sc.size {
		return record.TailTorn
	}
	return record.TailDamaged
}
