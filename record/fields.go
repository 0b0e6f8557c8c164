package record

import (
	"encoding/binary"
	"errors"
)

// ErrFields is the error Fields reports for a body that does not decode: a
// bug or a newer format, never a torn write (its frame passed a checksum).
var ErrFields = errors.New("record: malformed body")

// AppendString appends s as a uvarint length and its bytes.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Fields decodes a body written with encoding/binary's varints, fixed
// 16-byte ids and AppendString strings. The first failure sticks: every
// later read returns a zero value, and Err (or End) reports ErrFields.
// MaxString, when > 0, refuses longer strings.
type Fields struct {
	B         []byte
	Err       error
	MaxString int
}

func (d *Fields) fail() {
	if d.Err == nil {
		d.Err = ErrFields
	}
}

// Byte reads one byte.
func (d *Fields) Byte() byte {
	if len(d.B) < 1 {
		d.fail()
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// ID reads 16 bytes.
func (d *Fields) ID() (v [16]byte) {
	if len(d.B) < 16 {
		d.fail()
		return v
	}
	copy(v[:], d.B)
	d.B = d.B[16:]
	return v
}

// Varint reads a signed varint.
func (d *Fields) Varint() int64 {
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Uvarint reads an unsigned varint.
func (d *Fields) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Bytes reads a length-prefixed byte string (aliasing the body).
func (d *Fields) Bytes() []byte {
	n := d.Uvarint()
	if d.Err != nil || n > uint64(len(d.B)) || d.MaxString > 0 && n > uint64(d.MaxString) {
		d.fail()
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// String reads a length-prefixed string (a copy).
func (d *Fields) String() string { return string(d.Bytes()) }

// End reports ErrFields unless every byte was read without a failure.
func (d *Fields) End() error {
	if d.Err == nil && len(d.B) != 0 {
		d.fail()
	}
	return d.Err
}
