package notes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	kindTombstone = 1
	kindTrace     = 2

	// recHeader is the u32 length and the u32 CRC before each body.
	recHeader = 8
	// maxBody bounds one record (a trace's data comes from an HTTP body, which
	// the server limits far below this): a larger length is damage.
	maxBody = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errRecord is a body that does not decode: damage, never a client's input.
var errRecord = errors.New("notes: malformed record")

// MessageRef names one message: its partition and its offset there.
type MessageRef struct {
	Partition [16]byte
	Offset    uint64
}

// Trace is one trace event of a message (spec 9.3).
type Trace struct {
	MessageRef
	ID            [16]byte // the event's own id (UUIDv7), returned as traceId
	CreatedMicros int64    // µs since the Unix epoch
	TransactionID string
	Group         string
	EventType     string
	WorkerID      string // "" = null
	Names         []string
	Data          []byte // the JSON value as posted
}

// record is one decoded record: a tombstone (trace nil) or a trace event.
type record struct {
	ref   MessageRef
	trace *Trace
}

// appendRecord frames body (the kind byte onwards) with its length and CRC.
func appendRecord(dst, body []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(body)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(body, castagnoli))
	return append(dst, body...)
}

func encodeTombstone(ref MessageRef) []byte {
	b := make([]byte, 0, 1+16+binary.MaxVarintLen64)
	b = append(b, kindTombstone)
	b = append(b, ref.Partition[:]...)
	return binary.AppendUvarint(b, ref.Offset)
}

func encodeTrace(t *Trace) []byte {
	b := make([]byte, 0, 64+len(t.TransactionID)+len(t.Group)+len(t.EventType)+len(t.WorkerID)+len(t.Data))
	b = append(b, kindTrace)
	b = append(b, t.Partition[:]...)
	b = binary.AppendUvarint(b, t.Offset)
	b = append(b, t.ID[:]...)
	b = binary.AppendVarint(b, t.CreatedMicros)
	for _, s := range []string{t.TransactionID, t.Group, t.EventType, t.WorkerID} {
		b = appendStr(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Names)))
	for _, n := range t.Names {
		b = appendStr(b, n)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Data)))
	return append(b, t.Data...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// nextRecord decodes the record at the start of b and returns it with its
// framed length. ok is false when b does not start with a whole record whose
// CRC matches: the end of the readable part of the file.
func nextRecord(b []byte) (rec record, n int, ok bool) {
	if len(b) < recHeader {
		return rec, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if size == 0 || size > maxBody || uint64(len(b)-recHeader) < uint64(size) {
		return rec, 0, false
	}
	body := b[recHeader : recHeader+int(size)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return rec, 0, false
	}
	rec, err := decodeBody(body)
	if err != nil {
		return rec, 0, false
	}
	return rec, recHeader + int(size), true
}

// decodeBody decodes a CRC-checked body; an unknown kind or a short field is
// errRecord.
func decodeBody(body []byte) (record, error) {
	d := decoder{b: body}
	var rec record
	kind := d.byte()
	copy(rec.ref.Partition[:], d.bytes(16))
	rec.ref.Offset = d.uvarint()
	switch kind {
	case kindTombstone:
	case kindTrace:
		t := &Trace{MessageRef: rec.ref}
		copy(t.ID[:], d.bytes(16))
		t.CreatedMicros = d.varint()
		t.TransactionID, t.Group, t.EventType, t.WorkerID = d.str(), d.str(), d.str(), d.str()
		n := d.uvarint()
		if n > uint64(len(body)) {
			d.err = true
		}
		for i := uint64(0); i < n && !d.err; i++ {
			t.Names = append(t.Names, d.str())
		}
		t.Data = append([]byte(nil), d.bytes(int(min(d.uvarint(), uint64(len(body)+1))))...)
		rec.trace = t
	default:
		return rec, fmt.Errorf("%w: kind %d", errRecord, kind)
	}
	if d.err {
		return rec, errRecord
	}
	return rec, nil
}

// decoder reads fields from a body; a short read sets err and yields zeros.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.err = true
		d.b = nil
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = true
		d.b = nil
		return ""
	}
	return string(d.bytes(int(n)))
}
