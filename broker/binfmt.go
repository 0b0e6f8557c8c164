package broker

import (
	"encoding/binary"
	"errors"
)

// The broker's own small binary records (redo records in the cursor
// journal, DLQ metadata in a record's extra field) use uvarint-length
// strings and varints; metaReader decodes them.

// errMetaBody marks a record body that does not decode: a bug or a newer
// format, never a torn write (its frame passed a checksum).
var errMetaBody = errors.New("broker: malformed record body")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// metaReader decodes fields from b; the first failure sticks in err.
type metaReader struct {
	b   []byte
	err error
}

func (d *metaReader) fail() {
	if d.err == nil {
		d.err = errMetaBody
	}
}

func (d *metaReader) bytes16() (v [16]byte) {
	if len(d.b) < 16 {
		d.fail()
		return v
	}
	copy(v[:], d.b)
	d.b = d.b[16:]
	return v
}

func (d *metaReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *metaReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *metaReader) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
