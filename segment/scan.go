package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// SegmentInfo is one segment as Scan found it.
type SegmentInfo struct {
	File            string // segment file name in the directory, e.g. "00000000000000000001.seg"
	Pos, Bytes      int64  // where the segment's header starts in File, and header + stored bytes
	FirstOffset     uint64 // offset of its first record
	Count           uint32 // records in it
	TimestampMicros int64  // segment timestamp, µs since the Unix epoch
	Codec           Codec  // how its record block is stored
}

// Scan reads dir's segments in offset order without writing anything (no
// truncation, no index rebuild, no file created), starting at the segment
// that holds offset from (0, or anything below the first offset, starts at
// the first segment; whole segments are passed, so the first may hold
// offsets below from). fn gets each segment and its decoded, checksum-
// verified messages; the messages (strings included) alias scratch memory
// valid until fn returns. fn returns false to stop; Scan then returns nil.
//
// Damage ends the scan with a *CorruptionError (errors.Is ErrCorrupt; file,
// byte range, offsets where known): a segment that fails its checksum, does
// not decode or has the wrong base offset, or a gap in the offsets between
// files that the QUARANTINE marker does not cover (a covered gap is skipped).
// A torn tail of the newest file (damage with no whole segment after it, what
// Open would truncate) ends the scan with nil. I/O errors are returned
// wrapped with the path.
//
// Safe while a live server appends to dir: the file list and each file's
// size are read when the scan reaches them, so a segment being written as
// the newest file is read is seen as a torn tail and not passed; files
// created after the listing are not read; a file removed by retention before
// it is opened is skipped. The segment index, when it matches the file, is
// used only to find where offset from starts.
func Scan(dir string, from uint64, fn func(SegmentInfo, []Message) bool) error {
	names, err := vfs.OS.List(dir)
	if err != nil {
		return fmt.Errorf("segment scan %s: %w", dir, err)
	}
	var bases []uint64
	for _, n := range names {
		if b, ok := parseSegName(n); ok {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	start := max(sort.Search(len(bases), func(i int) bool { return bases[i] > from })-1, 0)
	s := scan{dir: dir, from: from, fn: fn}
	for i := start; i < len(bases); i++ {
		stop, err := s.file(bases[i], i == len(bases)-1, i == start)
		if err != nil || stop {
			return err
		}
	}
	return nil
}

// scan is the state of one Scan across files.
type scan struct {
	dir          string
	from         uint64
	fn           func(SegmentInfo, []Message) bool
	expect       uint64 // next offset expected; 0 = nothing read yet
	prev         string // path of the previous file read
	prevSize     int64
	quarantine   []OffsetRange
	quarantineOK bool // marker read
	buf          ReadBuffer
}

// file scans one segment file; stop says fn asked to stop or a torn tail ended the log.
func (s *scan) file(base uint64, newest, first bool) (stop bool, err error) {
	path := join(s.dir, segName(base))
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.expect = 0 // removed by retention after the listing: nothing to compare with
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("segment scan %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return true, fmt.Errorf("segment scan %s: %w", path, err)
	}
	size := st.Size()
	if err := s.checkGap(base); err != nil {
		return true, err
	}
	sc := scanner{f: f, size: size}
	pos, next := int64(0), base
	if first && s.from > base {
		pos, next = s.seek(&sc, base)
	}
	for pos < size {
		h, err := sc.header(pos)
		if err == nil && h.base != next {
			err = fmt.Errorf("segment base offset %d, expected %d", h.base, next)
		}
		skip := err == nil && s.from > 0 && h.last() < s.from
		var seg []byte
		if err == nil && !skip {
			s.buf.Reset()
			seg = s.buf.alloc(int(h.size()))
			if _, err = f.ReadAt(seg, pos); err != nil {
				return true, fmt.Errorf("segment scan %s: read at %d: %w", path, pos, err)
			}
			err = verify(h, seg)
			if err == nil {
				err = s.buf.decodeAll(h, seg)
			}
		}
		if err != nil {
			ce := &CorruptionError{File: path, StartByte: pos, EndByte: size, Reason: err.Error()}
			ce.FirstOffset, ce.LastOffset = sc.lostOffsets(pos, next)
			if !wholeSegmentFollows(f, pos, size, ce) {
				ce.Tail = endTail(&sc, pos)
			}
			if ce.Tail != record.TailCorrupt && newest {
				return true, nil // a torn tail: what Open truncates, never acknowledged
			}
			return true, ce
		}
		next = h.last() + 1
		info := SegmentInfo{File: segName(base), Pos: pos, Bytes: h.size(), FirstOffset: h.base,
			Count: h.count, TimestampMicros: h.tsMicros, Codec: h.codec}
		pos += h.size()
		if skip {
			continue
		}
		if !s.fn(info, s.buf.msgs) {
			return true, nil
		}
	}
	s.expect, s.prev, s.prevSize = next, path, size
	return false, nil
}

// checkGap compares base with where the previous file ended.
func (s *scan) checkGap(base uint64) error {
	if s.expect == 0 || base == s.expect {
		return nil
	}
	if base > s.expect {
		if !s.quarantineOK {
			rs, err := ReadQuarantine(s.dir)
			if err != nil {
				return err
			}
			s.quarantine, s.quarantineOK = rs, true
		}
		if QuarantineCovers(s.quarantine, s.expect, base-1) {
			return nil
		}
	}
	return &CorruptionError{File: s.prev, StartByte: s.prevSize, EndByte: s.prevSize,
		FirstOffset: min(s.expect, base), LastOffset: max(s.expect, base) - 1,
		Reason: fmt.Sprintf("file ends before offset %d but the next file starts at %d (no %s marker covers the gap)", s.expect, base, QuarantineFileName)}
}

// seek returns where the segment holding s.from starts, from the file's index
// when its entry still matches the segment header on disk; otherwise the
// start of the file (the segments before from are then skipped header by
// header).
func (s *scan) seek(sc *scanner, base uint64) (int64, uint64) {
	b, err := os.ReadFile(join(s.dir, idxName(base)))
	if err != nil || len(b) < index.HeaderSize || index.CheckHeader(b, base) != nil {
		return 0, base
	}
	ents := index.Entries(b[index.HeaderSize : index.HeaderSize+index.ValidEntries(b[index.HeaderSize:], base)*index.EntrySize])
	j := ents.FindOffset(s.from)
	if j < 0 {
		j = ents.Len() - 1 // from is past the indexed segments: start at the last one
	}
	if j < 0 {
		return 0, base
	}
	e := ents.At(j)
	if h, err := sc.header(e.Pos); err != nil || h.base != e.Base || h.count != e.Count || h.tsMicros != e.TimestampMicros {
		return 0, base
	}
	return e.Pos, e.Base
}

// decodeAll appends every record of the verified segment seg (header h) to
// b.msgs, with strings copied once (finishStrings).
func (b *ReadBuffer) decodeAll(h header, seg []byte) error {
	block := seg[HeaderSize:h.size()]
	if h.codec != CodecNone {
		var err error
		if block, err = decompress(b.alloc(int(h.rawLen)), block, h.codec, int(h.rawLen)); err != nil {
			return err
		}
	}
	off := h.base
	for ; len(block) > 0; off++ {
		r, rest, err := nextRecord(block)
		if err != nil {
			return fmt.Errorf("record %d: %w", off, err)
		}
		block = rest
		b.addMessage(off, h.tsMicros, &r)
	}
	if off != h.base+uint64(h.count) {
		return fmt.Errorf("%d records, header says %d", off-h.base, h.count)
	}
	b.finishStrings()
	return nil
}
