package entrylog

import "sort"

// Extent is where one segment of a partition lies: the frame at Pos of file
// File, Size bytes (frame header included), holding offsets
// [Base, Base+Count) stamped TsMicros.
type Extent struct {
	File     uint64
	Pos      int64
	Size     int32
	Count    uint32
	Base     uint64
	TsMicros int64
}

// Next is the offset after the extent's last record.
func (e Extent) Next() uint64 { return e.Base + uint64(e.Count) }

// fileCount is how many frames (live or dead, trims included) of one
// partition a file holds.
type fileCount struct {
	seq uint64
	n   int32
}

// part is one partition's index.
type part struct {
	exts   []Extent // live, sorted by Base
	trim   uint64   // offsets below are dead (the largest trim frame)
	frames []fileCount
}

// addFrame counts one more frame of the partition in file seq.
func (p *part) addFrame(seq uint64) {
	for i := range p.frames {
		if p.frames[i].seq == seq {
			p.frames[i].n++
			return
		}
	}
	p.frames = append(p.frames, fileCount{seq: seq, n: 1})
}

// dropFile forgets the frames of file seq; it reports whether the
// partition still has frames anywhere.
func (p *part) dropFile(seq uint64) bool {
	for i := range p.frames {
		if p.frames[i].seq == seq {
			p.frames = append(p.frames[:i], p.frames[i+1:]...)
			break
		}
	}
	return len(p.frames) > 0
}

// inOther reports whether the partition has frames in a file other than seq.
func (p *part) inOther(seq uint64) bool {
	for _, f := range p.frames {
		if f.seq != seq && f.n > 0 {
			return true
		}
	}
	return false
}

// insert adds e unless it is dead (below the trim) or a copy of a segment
// the index holds (same base); it reports whether e is live.
func (p *part) insert(e Extent) bool {
	if e.Next() <= p.trim {
		return false
	}
	i := sort.Search(len(p.exts), func(i int) bool { return p.exts[i].Base >= e.Base })
	if i < len(p.exts) && p.exts[i].Base == e.Base {
		return false
	}
	p.exts = append(p.exts, Extent{})
	copy(p.exts[i+1:], p.exts[i:])
	p.exts[i] = e
	return true
}

// trimTo raises the trim point to before and returns the extents that died.
func (p *part) trimTo(before uint64) []Extent {
	if before <= p.trim {
		return nil
	}
	p.trim = before
	n := 0
	for n < len(p.exts) && p.exts[n].Next() <= before {
		n++
	}
	dead := append([]Extent(nil), p.exts[:n]...)
	p.exts = append(p.exts[:0], p.exts[n:]...)
	if len(p.exts) == 0 {
		p.exts = nil
	}
	return dead
}

// next is the offset after the partition's newest live record (0 = none).
func (p *part) next() uint64 {
	if n := len(p.exts); n > 0 {
		return p.exts[n-1].Next()
	}
	return 0
}
