package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// HeaderSize is the bytes of a frame before its body.
const HeaderSize = 16

// Errors of Next and Append.
var (
	ErrShort    = errors.New("record: incomplete frame")  // the data ends inside the frame
	ErrZero     = errors.New("record: zero header")       // 16 zero bytes: the end of a preallocated file
	ErrHeader   = errors.New("record: bad frame header")  // wrong magic, or a length of 0 or over the format's maximum
	ErrChecksum = errors.New("record: checksum mismatch") // a whole frame whose checksum fails
	ErrTooLarge = errors.New("record: body over the format's maximum")
	ErrEmpty    = errors.New("record: empty body")
)

// Format is one kind of framed file: its magic and the largest body it holds.
type Format struct {
	Magic   [4]byte
	MaxBody int // bytes, at most 1<<30
	// Seed seeds the checksum (XXH64 with this seed; 0 for the unsalted
	// files). A file whose bodies carry client bytes (payloads, names) is
	// salted with a random seed kept in its header, so those bytes can never
	// form a frame that verifies in it: a resync past damage cannot be fooled
	// by a crafted payload. It is a salt, not a MAC.
	Seed uint64
}

// WithSeed returns f with its checksums seeded with seed.
func (f Format) WithSeed(seed uint64) Format {
	f.Seed = seed
	return f
}

// NewFormat returns the Format with magic m (4 ASCII bytes) and bodies of at
// most maxBody bytes. It panics on a malformed magic (a programming error).
func NewFormat(m string, maxBody int) Format {
	if len(m) != 4 || m == "\x00\x00\x00\x00" || maxBody <= 0 || maxBody > 1<<30 {
		panic(fmt.Sprintf("record: bad format %q/%d", m, maxBody))
	}
	var f Format
	copy(f.Magic[:], m)
	f.MaxBody = maxBody
	return f
}

// Check returns ErrEmpty or ErrTooLarge when a body of n bytes cannot be framed.
func (f Format) Check(n int) error {
	switch {
	case n == 0:
		return ErrEmpty
	case n > f.MaxBody:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, f.MaxBody)
	}
	return nil
}

// Append appends body as one frame to dst.
//
// Errors: ErrEmpty, ErrTooLarge (dst is returned unchanged).
func (f Format) Append(dst, body []byte) ([]byte, error) {
	if err := f.Check(len(body)); err != nil {
		return dst, err
	}
	dst, start := f.Begin(dst)
	dst = append(dst, body...)
	return f.Finish(dst, start)
}

// Begin appends room for a frame header, to be filled by Finish, for callers
// that encode the body directly into dst; it returns dst and where the frame
// starts.
func (f Format) Begin(dst []byte) ([]byte, int) {
	var h [HeaderSize]byte
	return append(dst, h[:]...), len(dst)
}

// Finish completes the frame begun at start: every byte of dst after its
// header is the body.
//
// Errors: ErrEmpty, ErrTooLarge (dst is cut back to start).
func (f Format) Finish(dst []byte, start int) ([]byte, error) {
	body := dst[start+HeaderSize:]
	if err := f.Check(len(body)); err != nil {
		return dst[:start], err
	}
	h := dst[start : start+HeaderSize]
	copy(h, f.Magic[:])
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint64(h[8:], f.sum(h[:8], body))
	return dst, nil
}

func (f Format) sum(head, body []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(f.Seed)
	_, _ = d.Write(head)
	_, _ = d.Write(body)
	return d.Sum64()
}

// Next decodes the frame at the start of b: its body (aliasing b) and the
// frame's length in bytes.
//
// Errors: ErrShort, ErrZero, ErrHeader, ErrChecksum.
func (f Format) Next(b []byte) (body []byte, n int, err error) {
	if len(b) < HeaderSize {
		if allZero(b) {
			return nil, 0, ErrZero
		}
		return nil, 0, ErrShort
	}
	h := b[:HeaderSize]
	if !bytes.Equal(h[:4], f.Magic[:]) {
		if allZero(h) {
			return nil, 0, ErrZero
		}
		return nil, 0, ErrHeader
	}
	size := binary.LittleEndian.Uint32(h[4:])
	if size == 0 || size > uint32(f.MaxBody) {
		return nil, 0, ErrHeader
	}
	n = HeaderSize + int(size)
	if len(b) < n {
		return nil, 0, ErrShort
	}
	body = b[HeaderSize:n]
	if f.sum(h[:8], body) != binary.LittleEndian.Uint64(h[8:]) {
		return nil, 0, ErrChecksum
	}
	return body, n, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
