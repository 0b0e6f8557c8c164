package meta

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/combmq/comb/record"
)

// Kind says what a journal record changes.
type Kind byte

// The record kinds (doc.go has their bodies).
const (
	KindQueuePut        Kind = 1 // queue created or reconfigured (whole replace)
	KindPartitionCreate Kind = 2
	KindQueueDelete     Kind = 3 // a queue deleted (in a snapshot: a tombstone of a deleted queue or of one of its partitions)
	KindDescribed       Kind = 4 // every directory made before it carries a DESCRIPTOR
	// KindCovers opens a snapshot of the registry written from the commit
	// log: the records after it describe the state as of LSN (commit-log
	// entries up to it are in; replay the ones after it).
	KindCovers Kind = 5
)

// Limits. A queue, partition or label name is at most 255 characters (spec
// 0.4), so at most 1020 bytes of UTF-8; MaxBody leaves room for options added
// later while staying far below what a damaged length field would claim.
const (
	MaxStringBytes = 1020
	MaxBody        = 64 << 10
)

// Errors.
var (
	// ErrRecordTooLarge is returned by WriteJournal for a record the reader would
	// refuse (a string over MaxStringBytes); nothing is written.
	ErrRecordTooLarge = errors.New("meta: record over its limits")
	// ErrBody marks a body that passed its checksum but does not decode: a bug
	// or a newer format, never a torn write.
	ErrBody = errors.New("meta: malformed record body")
)

// JournalFormat frames the journal's records (tools and tests that craft
// journals frame their bodies with it).
var JournalFormat = record.NewFormat("CMTJ", MaxBody)

// Record is one metadata change. Fields its Kind does not use stay zero.
type Record struct {
	Kind      Kind
	ID        [16]byte // queue id (put, delete) or partition id (create)
	QueueID   [16]byte // partition create only
	CreatedAt int64    // µs
	Name      string
	Namespace string
	Task      string
	Opts      QueueOptions
	LSN       uint64 // KindCovers only
}

// Check returns ErrRecordTooLarge (wrapped, naming the field) when r holds a
// string over MaxStringBytes, or ErrBody for an unknown kind.
func (r *Record) Check() error {
	for _, f := range []struct{ name, v string }{{"name", r.Name}, {"namespace", r.Namespace}, {"task", r.Task}} {
		if len(f.v) > MaxStringBytes {
			return fmt.Errorf("%w: %s is %d bytes, at most %d", ErrRecordTooLarge, f.name, len(f.v), MaxStringBytes)
		}
	}
	if r.Kind < KindQueuePut || r.Kind > KindCovers {
		return fmt.Errorf("%w: unknown kind %d", ErrBody, r.Kind)
	}
	return nil
}

// appendBody appends r's body (no framing) to b.
func (r *Record) appendBody(b []byte) []byte {
	b = append(b, byte(r.Kind))
	b = append(b, r.ID[:]...)
	switch r.Kind {
	case KindQueuePut:
		b = binary.AppendVarint(b, r.CreatedAt)
		b = record.AppendString(b, r.Name)
		b = record.AppendString(b, r.Namespace)
		b = record.AppendString(b, r.Task)
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
	case KindPartitionCreate:
		b = append(b, r.QueueID[:]...)
		b = binary.AppendVarint(b, r.CreatedAt)
		b = record.AppendString(b, r.Name)
	case KindCovers:
		b = binary.AppendUvarint(b, r.LSN)
	}
	return b
}

// AppendBody appends r's body (what a journal frame holds) to b: the form a
// metadata change takes as a commit-log entry.
//
// Errors: ErrRecordTooLarge, ErrBody (b is returned unchanged).
func (r *Record) AppendBody(b []byte) ([]byte, error) {
	if err := r.Check(); err != nil {
		return b, err
	}
	return r.appendBody(b), nil
}

// DecodeBody decodes a body made by AppendBody. It never panics on any input.
//
// Errors: ErrBody (wrapped).
func DecodeBody(body []byte) (Record, error) { return decodeRecord(body) }

// appendFrame appends r as one journal frame to b.
//
// Errors: ErrRecordTooLarge, ErrBody (b is returned unchanged).
func (r *Record) appendFrame(b []byte) ([]byte, error) {
	if err := r.Check(); err != nil {
		return b, err
	}
	b, start := JournalFormat.Begin(b)
	b = r.appendBody(b)
	b, err := JournalFormat.Finish(b, start)
	if err != nil {
		return b, fmt.Errorf("%w: %v", ErrRecordTooLarge, err)
	}
	return b, nil
}

// decodeRecord decodes one record body. It never panics on any input.
//
// Errors: ErrBody (wrapped).
func decodeRecord(body []byte) (Record, error) {
	var r Record
	d := &record.Fields{B: body, MaxString: MaxStringBytes}
	r.Kind = Kind(d.Byte())
	r.ID = d.ID()
	switch r.Kind {
	case KindQueuePut:
		r.CreatedAt = d.Varint()
		r.Name = d.String()
		r.Namespace = d.String()
		r.Task = d.String()
		r.Opts = DefaultQueueOptions()
		ints := optionInts(&r.Opts)
		n := d.Uvarint()
		if n > 64 {
			d.Err = ErrBody
		}
		for i := uint64(0); i < n && d.Err == nil; i++ {
			v := d.Varint()
			if i < uint64(len(ints)) {
				*ints[i] = v
			}
		}
		flags := d.Uvarint()
		for i, p := range optionFlags(&r.Opts) {
			*p = flags&(1<<i) != 0
		}
	case KindPartitionCreate:
		r.QueueID = d.ID()
		r.CreatedAt = d.Varint()
		r.Name = d.String()
	case KindQueueDelete, KindDescribed:
	case KindCovers:
		r.LSN = d.Uvarint()
	default:
		if d.Err == nil {
			return r, fmt.Errorf("%w: unknown kind %d", ErrBody, r.Kind)
		}
	}
	if err := d.End(); err != nil {
		return r, fmt.Errorf("%w: %v (kind %d)", ErrBody, err, r.Kind)
	}
	return r, nil
}
