package streams

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/combmq/comb/record"
)

// ErrCorrupt is what a decoder reports for bytes that do not decode (their
// frame verified, so a bug or a newer format, not a torn write).
var ErrCorrupt = errors.New("streams: malformed body")

// Op kinds of a Change.
const (
	OpUpsert byte = 1
	OpDelete byte = 2
)

// Op is one state operation of a cycle.
type Op struct {
	Kind            byte // OpUpsert or OpDelete
	Key             string
	Value           []byte // upsert: the value's JSON text
	UpdatedAtMicros int64
}

// Change is a cycle's state operations on one shard, as its transaction's
// commit-log entry carries them.
type Change struct {
	Query, Partition [16]byte
	Ops              []Op
}

// Query is a registered stream query.
type Query struct {
	ID                               [16]byte
	Name, Source, Sink, ConfigHash   string
	CreatedAtMicros, UpdatedAtMicros int64
	ResetLSN                         uint64 // the LSN of the last reset (0 = never reset)
}

func appendID(b []byte, id [16]byte) []byte { return append(b, id[:]...) }

// AppendChange appends c's encoding (doc.go, "Change") to b.
func AppendChange(b []byte, c *Change) []byte {
	b = appendID(b, c.Query)
	b = appendID(b, c.Partition)
	b = binary.AppendUvarint(b, uint64(len(c.Ops)))
	for i := range c.Ops {
		op := &c.Ops[i]
		b = append(b, op.Kind)
		b = record.AppendString(b, op.Key)
		b = binary.AppendVarint(b, op.UpdatedAtMicros)
		if op.Kind == OpUpsert {
			b = binary.AppendUvarint(b, uint64(len(op.Value)))
			b = append(b, op.Value...)
		}
	}
	return b
}

// ChangeSizeBound is at least the bytes AppendChange appends for c.
func ChangeSizeBound(c *Change) int {
	n := 32 + binary.MaxVarintLen64
	for i := range c.Ops {
		n += 1 + len(c.Ops[i].Key) + len(c.Ops[i].Value) + 3*binary.MaxVarintLen64
	}
	return n
}

// ReadChange decodes one Change from d (values are copied). It never panics;
// a failure sticks in d.Err.
func ReadChange(d *record.Fields) Change {
	var c Change
	c.Query = d.ID()
	c.Partition = d.ID()
	n := count(d)
	for ; n > 0 && d.Err == nil; n-- {
		var op Op
		op.Kind = d.Byte()
		op.Key = d.String()
		op.UpdatedAtMicros = d.Varint()
		switch op.Kind {
		case OpUpsert:
			op.Value = append([]byte{}, d.Bytes()...)
		case OpDelete:
		default:
			d.Err = ErrCorrupt
		}
		c.Ops = append(c.Ops, op)
	}
	return c
}

// count reads a uvarint count bounded by the bytes left (each element takes
// at least one), so a forged count cannot make a decoder allocate.
func count(d *record.Fields) int {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Err = ErrCorrupt
		return 0
	}
	return int(n)
}

func appendQuery(b []byte, q *Query) []byte {
	b = appendID(b, q.ID)
	b = record.AppendString(b, q.Name)
	b = record.AppendString(b, q.Source)
	b = record.AppendString(b, q.Sink)
	b = record.AppendString(b, q.ConfigHash)
	b = binary.AppendVarint(b, q.CreatedAtMicros)
	return binary.AppendVarint(b, q.UpdatedAtMicros)
}

func readQuery(d *record.Fields) Query {
	var q Query
	q.ID = d.ID()
	q.Name = d.String()
	q.Source = d.String()
	q.Sink = d.String()
	q.ConfigHash = d.String()
	q.CreatedAtMicros = d.Varint()
	q.UpdatedAtMicros = d.Varint()
	return q
}

// EncodeEntry is the payload of a registration's commit-log entry: the whole
// query as it is after the registration, and whether it reset the state.
func EncodeEntry(q Query, reset bool) []byte {
	b := []byte{1, 0}
	if reset {
		b[1] = 1
	}
	return appendQuery(b, &q)
}

// DecodeEntry decodes EncodeEntry's payload. It never panics.
//
// Errors: ErrCorrupt.
func DecodeEntry(b []byte) (q Query, reset bool, err error) {
	if len(b) < 2 || b[0] != 1 || b[1] > 1 {
		return q, false, fmt.Errorf("streams: registry entry: %w", ErrCorrupt)
	}
	d := &record.Fields{B: b[2:]}
	q = readQuery(d)
	if d.Err != nil || len(d.B) != 0 {
		return Query{}, false, fmt.Errorf("streams: registry entry: %w", ErrCorrupt)
	}
	return q, b[1] == 1, nil
}

// Registry is the decoded registry file.
type Registry struct {
	Covers  uint64
	Queries []Query
}

// EncodeRegistry is the registry file's body.
func EncodeRegistry(r Registry) []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, r.Covers)
	b = binary.AppendUvarint(b, uint64(len(r.Queries)))
	for i := range r.Queries {
		b = appendQuery(b, &r.Queries[i])
		b = binary.AppendUvarint(b, r.Queries[i].ResetLSN)
	}
	return b
}

// DecodeRegistry decodes a registry file's body. It never panics.
//
// Errors: ErrCorrupt.
func DecodeRegistry(b []byte) (Registry, error) {
	var r Registry
	if len(b) < 1 || b[0] != 1 {
		return r, fmt.Errorf("streams: registry: %w", ErrCorrupt)
	}
	d := &record.Fields{B: b[1:]}
	r.Covers = d.Uvarint()
	for n := count(d); n > 0 && d.Err == nil; n-- {
		q := readQuery(d)
		q.ResetLSN = d.Uvarint()
		r.Queries = append(r.Queries, q)
	}
	if d.Err != nil || len(d.B) != 0 {
		return Registry{}, fmt.Errorf("streams: registry: %w", ErrCorrupt)
	}
	return r, nil
}

// Snapshot is one shard's decoded snapshot file.
type Snapshot struct {
	Query, Partition [16]byte
	LSN              uint64 // the last change it holds
	Cycles           uint64
	Rows             []KeyRow // keys ascending
}

// KeyRow is one row with its key.
type KeyRow struct {
	Key string
	Row
}

// EncodeSnapshot is a snapshot file's body.
func EncodeSnapshot(s *Snapshot) []byte {
	size := 64
	for i := range s.Rows {
		size += len(s.Rows[i].Key) + len(s.Rows[i].Value) + 16
	}
	b := make([]byte, 0, size)
	b = append(b, 1)
	b = appendID(b, s.Query)
	b = appendID(b, s.Partition)
	b = binary.AppendUvarint(b, s.LSN)
	b = binary.AppendUvarint(b, s.Cycles)
	b = binary.AppendUvarint(b, uint64(len(s.Rows)))
	for i := range s.Rows {
		b = record.AppendString(b, s.Rows[i].Key)
		b = binary.AppendVarint(b, s.Rows[i].UpdatedAtMicros)
		b = binary.AppendUvarint(b, uint64(len(s.Rows[i].Value)))
		b = append(b, s.Rows[i].Value...)
	}
	return b
}

// DecodeSnapshot decodes a snapshot file's body (values alias b). It never
// panics.
//
// Errors: ErrCorrupt, also for keys not strictly ascending.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	var s Snapshot
	if len(b) < 1 || b[0] != 1 {
		return s, fmt.Errorf("streams: snapshot: %w", ErrCorrupt)
	}
	d := &record.Fields{B: b[1:]}
	s.Query = d.ID()
	s.Partition = d.ID()
	s.LSN = d.Uvarint()
	s.Cycles = d.Uvarint()
	n := count(d)
	s.Rows = make([]KeyRow, 0, n)
	for ; n > 0 && d.Err == nil; n-- {
		var r KeyRow
		r.Key = d.String()
		r.UpdatedAtMicros = d.Varint()
		r.Value = d.Bytes()
		if k := len(s.Rows); k > 0 && s.Rows[k-1].Key >= r.Key {
			d.Err = ErrCorrupt
		}
		s.Rows = append(s.Rows, r)
	}
	if d.Err != nil || len(d.B) != 0 {
		return Snapshot{}, fmt.Errorf("streams: snapshot: %w", ErrCorrupt)
	}
	return s, nil
}
