package segment

import (
	"bytes"
	"fmt"
	"io"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// VerifyStats summarises a Verify scan.
type VerifyStats struct {
	Files, Segments int
	Records         uint64
	Bytes           int64  // segment-file bytes scanned
	FirstOffset     uint64 // first offset found; 0 when none
	NextOffset      uint64 // one past the last offset found; 0 when none
}

// Verify checks every segment of every segment file in dir: header, checksum,
// decompression, record framing, offsets dense within and across files and
// timestamps not decreasing. Each damaged byte range is passed to damage as a
// *CorruptionError (offsets where known): after damage the scan looks for the
// next byte position holding a segment whose checksum verifies and resumes
// there, so one bad segment is one report and the rest of the file is still
// checked. A damaged range at the end of the newest file is what Open would
// truncate as a torn tail. Index files are not read (they are rebuilt on Open).
// The returned error is for I/O failures only. Read-only: safe on a live
// directory, though segments being appended may show up as a torn tail.
func Verify(dir string, damage func(*CorruptionError)) (VerifyStats, error) {
	return verifyFS(vfs.OS, dir, damage)
}

func verifyFS(fsys fileSystem, dir string, damage func(*CorruptionError)) (VerifyStats, error) {
	var st VerifyStats
	names, err := fsys.List(dir)
	if err != nil {
		return st, fmt.Errorf("verify %s: %w", dir, err)
	}
	var expect uint64 // next offset expected; 0 = no file seen yet
	var lastTs int64
	for _, name := range names {
		base, ok := parseSegName(name)
		if !ok {
			continue
		}
		path := join(dir, name)
		f, err := openAppend(fsys, path, false)
		if err != nil {
			return st, fmt.Errorf("verify %s: %w", path, err)
		}
		size, err := f.Size()
		if err != nil {
			_ = f.Close()
			return st, fmt.Errorf("verify %s: %w", path, err)
		}
		st.Files++
		st.Bytes += size
		if expect != 0 && base != expect {
			damage(&CorruptionError{File: path, FirstOffset: min(base, expect), LastOffset: max(base, expect) - 1,
				Reason: fmt.Sprintf("file starts at offset %d, previous file ended before %d", base, expect)})
		}
		if st.FirstOffset == 0 {
			st.FirstOffset = base
		}
		expect = base
		sc := scanner{f: f, size: size}
		var dec []byte
		for pos := int64(0); pos < size; {
			h, err := sc.wholeSegment(pos, &dec)
			if err != nil {
				end := resync(f, pos+1, size)
				ce := &CorruptionError{File: path, StartByte: pos, EndByte: end, Reason: err.Error(), Tail: record.TailCorrupt}
				if end >= size {
					ce.Tail = endTail(&sc, pos)
				}
				if nh, herr := sc.header(end); herr == nil && end < size && nh.base >= expect {
					// The damage held exactly the offsets before the next good segment.
					ce.FirstOffset, ce.LastOffset = expect, nh.base-1
					expect = nh.base
					if nh.base == ce.FirstOffset {
						ce.FirstOffset, ce.LastOffset = 0, 0
					}
				} else {
					ce.FirstOffset, ce.LastOffset = sc.lostOffsets(pos, expect)
				}
				damage(ce)
				pos = end
				continue
			}
			if h.base != expect {
				damage(&CorruptionError{File: path, StartByte: pos, EndByte: pos + h.size(),
					FirstOffset: h.base, LastOffset: h.last(), Tail: record.TailCorrupt,
					Reason: fmt.Sprintf("segment base offset %d, expected %d", h.base, expect)})
			}
			if h.tsMicros < lastTs {
				damage(&CorruptionError{File: path, StartByte: pos, EndByte: pos + h.size(),
					FirstOffset: h.base, LastOffset: h.last(), Tail: record.TailCorrupt,
					Reason: fmt.Sprintf("segment timestamp %d before the previous %d", h.tsMicros, lastTs)})
			}
			st.Segments++
			st.Records += uint64(h.count)
			expect, lastTs = h.last()+1, h.tsMicros
			pos += h.size()
		}
		_ = f.Close()
	}
	if st.FirstOffset != 0 {
		st.NextOffset = expect
	}
	return st, nil
}

// wholeSegment checks the segment at pos as Verify does: header, checksum,
// decompression (into *dec) and record framing.
func (s *scanner) wholeSegment(pos int64, dec *[]byte) (header, error) {
	h, err := s.header(pos)
	var seg []byte
	if err == nil {
		seg, err = s.segment(pos, h)
	}
	if err == nil && h.codec != CodecNone {
		*dec = grow((*dec)[:0], int(h.rawLen))
		_, err = decompress((*dec)[:h.rawLen], seg[HeaderSize:], h.codec, int(h.rawLen))
	}
	if err == nil {
		err = checkRecords(h, seg, *dec)
	}
	return h, err
}

// endTail classifies damage at pos that runs to the end of its file with no
// whole segment after it: zeros only, an incomplete segment, or a segment of
// full length that fails (see RecoveryReport.Tail).
func endTail(sc *scanner, pos int64) record.Tail {
	if end, err := dataEnd(sc.f, pos, sc.size); err == nil && end == pos {
		return record.TailZeros
	}
	return tailKind(sc, pos)
}

// checkRecords decodes every record of a verified segment.
func checkRecords(h header, seg, dec []byte) error {
	block := seg[HeaderSize:h.size()]
	if h.codec != CodecNone {
		block = dec[:h.rawLen]
	}
	n := uint32(0)
	for len(block) > 0 {
		var err error
		if _, block, err = nextRecord(block); err != nil {
			return fmt.Errorf("record %d: %w", h.base+uint64(n), err)
		}
		n++
	}
	if n != h.count {
		return fmt.Errorf("%d records, header says %d", n, h.count)
	}
	return nil
}

// resync returns the first position ≥ from where a segment with a valid
// checksum starts, or size when there is none.
func resync(f io.ReaderAt, from, size int64) int64 {
	sc := scanner{f: f, size: size}
	const window = 1 << 20
	buf := make([]byte, window+len(segMagic)-1)
	for at := from; at < size; at += window {
		n, _ := f.ReadAt(buf, at)
		b := buf[:n]
		for i := 0; ; {
			j := bytes.Index(b[i:], segMagic[:])
			if j < 0 {
				break
			}
			pos := at + int64(i+j)
			if h, err := sc.header(pos); err == nil {
				if _, err := sc.segment(pos, h); err == nil {
					return pos
				}
			}
			i += j + 1
		}
	}
	return size
}
