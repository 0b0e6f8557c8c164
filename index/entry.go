package index

import (
	"encoding/binary"
	"errors"

	"github.com/cespare/xxhash/v2"
)

// Sizes of the segment index file's parts, in bytes.
const (
	HeaderSize = 32
	EntrySize  = 32
	Version    = 1
)

var segMagic = [4]byte{'C', 'M', 'B', 'I'}

// Sentinel errors.
var (
	// ErrBadHeader means an index file's header is missing, torn or names another file.
	ErrBadHeader = errors.New("index: bad header")
)

// Entry describes one segment of a segment file.
type Entry struct {
	Base            uint64 // first offset of the segment
	Pos             int64  // byte position of the segment header in its segment file
	TimestampMicros int64  // segment timestamp, µs since the Unix epoch
	Count           uint32 // records in the segment (≥ 1)
}

// Last is the segment's last offset.
func (e Entry) Last() uint64 { return e.Base + uint64(e.Count) - 1 }

// PutHeader writes a segment index header for the segment file starting at base.
func PutHeader(b []byte, base uint64) {
	clear(b[:HeaderSize])
	copy(b, segMagic[:])
	b[4] = Version
	binary.LittleEndian.PutUint64(b[8:], base)
}

// CheckHeader reports whether b starts with a header for the segment file starting at base.
func CheckHeader(b []byte, base uint64) error {
	if len(b) < HeaderSize || [4]byte(b[:4]) != segMagic || b[4] != Version ||
		binary.LittleEndian.Uint64(b[8:]) != base {
		return ErrBadHeader
	}
	return nil
}

// PutEntry encodes e into b[:EntrySize].
func PutEntry(b []byte, e Entry) {
	_ = b[EntrySize-1]
	binary.LittleEndian.PutUint64(b[0:], e.Base)
	binary.LittleEndian.PutUint64(b[8:], uint64(e.Pos))
	binary.LittleEndian.PutUint64(b[16:], uint64(e.TimestampMicros))
	binary.LittleEndian.PutUint32(b[24:], e.Count)
	binary.LittleEndian.PutUint32(b[28:], uint32(xxhash.Sum64(b[:28])))
}

// DecodeEntry decodes b[:EntrySize]; ok is false when the check field or the
// count says the bytes are not an entry (zeros, torn or garbage).
func DecodeEntry(b []byte) (e Entry, ok bool) {
	if len(b) < EntrySize {
		return Entry{}, false
	}
	if binary.LittleEndian.Uint32(b[28:]) != uint32(xxhash.Sum64(b[:28])) {
		return Entry{}, false
	}
	e = Entry{
		Base:            binary.LittleEndian.Uint64(b[0:]),
		Pos:             int64(binary.LittleEndian.Uint64(b[8:])),
		TimestampMicros: int64(binary.LittleEndian.Uint64(b[16:])),
		Count:           binary.LittleEndian.Uint32(b[24:]),
	}
	return e, e.Count > 0 && e.Pos >= 0
}

// ValidEntries counts the entries at the start of body (the bytes after the
// header) that decode and follow one another: the first must have base fileBase
// at position 0, each next one base = previous base + count, a larger position
// and a timestamp not below the previous one.
func ValidEntries(body []byte, fileBase uint64) int {
	n := 0
	var prev Entry
	for off := 0; off+EntrySize <= len(body); off += EntrySize {
		e, ok := DecodeEntry(body[off:])
		if !ok {
			break
		}
		if n == 0 {
			if e.Base != fileBase || e.Pos != 0 {
				break
			}
		} else if e.Base != prev.Base+uint64(prev.Count) || e.Pos <= prev.Pos ||
			e.TimestampMicros < prev.TimestampMicros {
			break
		}
		prev = e
		n++
	}
	return n
}
