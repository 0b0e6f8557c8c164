package record

import (
	"bytes"
	"errors"
	"fmt"
)

// Tail says what follows the last verified frame of a file (see the package
// comment for what each means and what its owner does).
type Tail int

const (
	TailClean   Tail = iota // nothing
	TailZeros               // zero bytes only
	TailTorn                // an incomplete frame, nothing verified after it
	TailDamaged             // a full-length frame that fails its checks, nothing verified after it
	TailCorrupt             // damage with a verified frame after it
)

func (t Tail) String() string {
	switch t {
	case TailClean:
		return "clean"
	case TailZeros:
		return "zeros"
	case TailTorn:
		return "torn"
	case TailDamaged:
		return "damaged"
	case TailCorrupt:
		return "corrupt"
	}
	return fmt.Sprintf("Tail(%d)", int(t))
}

// Scan is what Format.Scan found in a file's bytes.
type Scan struct {
	End  int64 // bytes of verified frames from the start: where the next frame goes
	Tail Tail
	// Resync is where the first verified frame after the damage starts
	// (TailCorrupt only; else -1).
	Resync int64
	// DataEnd is where the non-zero bytes after End stop: [End, DataEnd) is
	// what a truncation at End would cut that is not preallocated zeros
	// (what the owner copies to quarantine first). Equal to End when nothing
	// but zeros follows.
	DataEnd int64
	Frames  int // verified frames before End
}

// Lost reports whether a truncation at End would cut non-zero bytes.
func (s Scan) Lost() bool { return s.DataEnd > s.End }

// Scan walks the frames of data from byte 0, passing each verified body and
// its position to fn (nil fn: count only), and classifies what follows the
// last one. A non-nil error from fn stops the walk and is returned as is
// (with Scan.End at the frame fn refused): a body that verifies but does not
// decode is the caller's kind of damage (a newer format or a bug).
func (f Format) Scan(data []byte, fn func(pos int64, body []byte) error) (Scan, error) {
	s := Scan{Resync: -1}
	pos := 0
	var stop error
	for pos < len(data) {
		body, n, err := f.Next(data[pos:])
		if err != nil {
			stop = err
			break
		}
		if fn != nil {
			if err := fn(int64(pos), body); err != nil {
				s.End = int64(pos)
				s.DataEnd = int64(len(data) - trailingZeros(data[pos:]))
				return s, err
			}
		}
		pos += n
		s.Frames++
	}
	s.End = int64(pos)
	s.DataEnd = int64(len(data) - trailingZeros(data[pos:]))
	switch {
	case pos == len(data):
		s.Tail = TailClean
	case s.DataEnd == s.End:
		s.Tail = TailZeros
	default:
		if r := f.resync(data, pos+1); r >= 0 {
			s.Tail, s.Resync = TailCorrupt, int64(r)
		} else if errors.Is(stop, ErrShort) {
			s.Tail = TailTorn
		} else {
			s.Tail = TailDamaged
		}
	}
	return s, nil
}

// resync returns the position of the first verified frame at or after from,
// or -1.
func (f Format) resync(data []byte, from int) int {
	for p := from; p < len(data); {
		i := bytes.Index(data[p:], f.Magic[:])
		if i < 0 {
			return -1
		}
		if _, _, err := f.Next(data[p+i:]); err == nil {
			return p + i
		}
		p += i + 1
	}
	return -1
}

// trailingZeros counts the zero bytes at the end of b.
func trailingZeros(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == 0; i-- {
		n++
	}
	return n
}
