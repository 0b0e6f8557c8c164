package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Metadata journal records (see doc.go for the framing). Every record body
// starts with a kind byte.
const (
	metaQueuePut        byte = 1 // queue created or reconfigured (whole replace)
	metaPartitionCreate byte = 2
	metaQueueDelete     byte = 3
)

// errMetaBody marks a body that passed its checksum but does not decode: a
// bug or a newer format, never a torn write.
var errMetaBody = errors.New("metadata record: malformed body")

// metaRecord is one decoded metadata journal record. Fields that the kind does
// not use stay zero.
type metaRecord struct {
	Kind      byte
	ID        [16]byte // queue id (put, delete) or partition id (create)
	QueueID   [16]byte // partition create only
	CreatedAt int64    // µs
	Name      string
	Namespace string
	Task      string
	Opts      QueueOptions
}

// optionInts lists the integer options in their on-disk order. Appending a new
// option at the end keeps old journals readable (a shorter list decodes with
// defaults for the missing tail).
func optionInts(o *QueueOptions) []*int64 {
	return []*int64{&o.LeaseTime, &o.RetryLimit, &o.RetryDelay, &o.MaxSize, &o.TTL, &o.Priority,
		&o.DelayedProcessing, &o.WindowBuffer, &o.MinPopWaitTime, &o.RetentionSeconds,
		&o.CompletedRetentionSeconds, &o.MaxWaitTimeSeconds}
}

func optionFlags(o *QueueOptions) []*bool {
	return []*bool{&o.RetentionEnabled, &o.EncryptionEnabled, &o.DeadLetterQueue, &o.DLQAfterMaxRetries}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encode appends the record body (no framing) to b.
func (r *metaRecord) encode(b []byte) []byte {
	b = append(b, r.Kind)
	b = append(b, r.ID[:]...)
	switch r.Kind {
	case metaQueuePut:
		b = binary.AppendVarint(b, r.CreatedAt)
		b = appendString(b, r.Name)
		b = appendString(b, r.Namespace)
		b = appendString(b, r.Task)
		o := r.Opts
		ints := optionInts(&o)
		b = binary.AppendUvarint(b, uint64(len(ints)))
		for _, p := range ints {
			b = binary.AppendVarint(b, *p)
		}
		var flags uint64
		for i, p := range optionFlags(&o) {
			if *p {
				flags |= 1 << i
			}
		}
		b = binary.AppendUvarint(b, flags)
	case metaPartitionCreate:
		b = append(b, r.QueueID[:]...)
		b = binary.AppendVarint(b, r.CreatedAt)
		b = appendString(b, r.Name)
	}
	return b
}

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

// decodeMetaRecord decodes one record body. It never panics on any input.
func decodeMetaRecord(body []byte) (metaRecord, error) {
	var r metaRecord
	if len(body) < 1 {
		return r, errMetaBody
	}
	r.Kind = body[0]
	d := &metaReader{b: body[1:]}
	r.ID = d.bytes16()
	switch r.Kind {
	case metaQueuePut:
		r.CreatedAt = d.varint()
		r.Name = d.str()
		r.Namespace = d.str()
		r.Task = d.str()
		r.Opts = DefaultQueueOptions()
		ints := optionInts(&r.Opts)
		n := d.uvarint()
		if n > 64 {
			d.fail()
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			v := d.varint()
			if i < uint64(len(ints)) {
				*ints[i] = v
			}
		}
		flags := d.uvarint()
		for i, p := range optionFlags(&r.Opts) {
			*p = flags&(1<<i) != 0
		}
	case metaPartitionCreate:
		r.QueueID = d.bytes16()
		r.CreatedAt = d.varint()
		r.Name = d.str()
	case metaQueueDelete:
	default:
		return r, fmt.Errorf("%w: unknown kind %d", errMetaBody, r.Kind)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	return r, d.err
}
