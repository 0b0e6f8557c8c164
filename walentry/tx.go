package walentry

import (
	"encoding/binary"
	"errors"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/streams"
)

// TxRecord is a transaction's redo record, the payload of a Tx entry: the
// entry's durability is the transaction's commit point (broker/doc.go,
// "Transactions"); start-up replays what of it the logs lack, and comb fsck
// decodes it to check it.
//
//	ver u8 (1) | txid [16] | ts varint µs
//	states: n, then n × { partition [16] | group str | hadPre u8 | pre state | post state }
//	pushes: n, then n × { partition [16] | m, then m × { id [16] | txid str | trace str | producer str | payload bytes } }
//	dlq:    n, then n × { queue id [16] | id [16] | key str | trace str | producer str | payload bytes | extra bytes }
//	state:  committed | retries | lease id [16] | worker str | start | end | expiresAt varint | attempts
//	streams (ver 2 only): n, then n × streams.Change (a streams cycle's state ops, package streams)
//
// A record without state changes of a stream query is written as version 1,
// byte for byte as before streams existed; one with them as version 2.
//
// Integers are uvarint unless marked varint; str and bytes are uvarint length
// + bytes.
type TxRecord struct {
	TxID   [16]byte
	TS     int64
	States []TxState
	Pushes []TxPush
	DLQ    []TxDLQ
	// Streams are a streams cycle's state ops (stream_cycle.go): applied to
	// the state store with the entry's LSN once it is durable.
	Streams []streams.Change
}

type TxState struct {
	Partition [16]byte
	Group     string
	HadPre    bool
	Pre, Post lease.State
}

type TxPush struct {
	Partition [16]byte
	Recs      []segment.Record
}

type TxDLQ struct {
	Queue [16]byte
	Rec   segment.Record
}

// ErrTx is returned by DecodeTx for a payload that is not a TxRecord.
var ErrTx = errors.New("transaction redo record: malformed")

func appendState(b []byte, s lease.State) []byte {
	b = binary.AppendUvarint(b, s.Committed)
	b = binary.AppendUvarint(b, uint64(s.Retries))
	b = append(b, s.Lease.ID[:]...)
	b = record.AppendString(b, s.Lease.WorkerID)
	b = binary.AppendUvarint(b, s.Lease.Start)
	b = binary.AppendUvarint(b, s.Lease.End)
	b = binary.AppendVarint(b, s.Lease.ExpiresAtMicros)
	return binary.AppendUvarint(b, uint64(s.Lease.Attempts))
}

func (d *fieldReader) state() lease.State {
	var s lease.State
	s.Committed = d.Uvarint()
	s.Retries = uint32(d.Uvarint())
	s.Lease.ID = d.ID()
	s.Lease.WorkerID = d.String()
	s.Lease.Start = d.Uvarint()
	s.Lease.End = d.Uvarint()
	s.Lease.ExpiresAtMicros = d.Varint()
	s.Lease.Attempts = uint32(d.Uvarint())
	return s
}

func (d *fieldReader) byteSlice() []byte {
	b := d.Bytes()
	if d.Err != nil {
		return nil
	}
	return append([]byte(nil), b...)
}

func appendRecordFields(b []byte, r *segment.Record) []byte {
	b = append(b, r.ID[:]...)
	b = record.AppendString(b, r.TransactionID)
	b = record.AppendString(b, r.TraceID)
	b = record.AppendString(b, r.ProducerSub)
	b = binary.AppendUvarint(b, uint64(len(r.Payload)))
	return append(b, r.Payload...)
}

func (d *fieldReader) record() segment.Record {
	var r segment.Record
	r.ID = d.ID()
	r.TransactionID = d.String()
	r.TraceID = d.String()
	r.ProducerSub = d.String()
	r.Payload = d.byteSlice()
	return r
}

// Encode returns r as a Tx entry payload (version 1, or 2 when it carries
// stream state changes).
func (r *TxRecord) Encode() []byte {
	b := make([]byte, 1, r.encodedSizeBound())
	b[0] = 1
	if len(r.Streams) > 0 {
		b[0] = 2
	}
	b = append(b, r.TxID[:]...)
	b = binary.AppendVarint(b, r.TS)
	b = binary.AppendUvarint(b, uint64(len(r.States)))
	for _, s := range r.States {
		b = append(b, s.Partition[:]...)
		b = record.AppendString(b, s.Group)
		if s.HadPre {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = appendState(b, s.Pre)
		b = appendState(b, s.Post)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Pushes)))
	for _, p := range r.Pushes {
		b = append(b, p.Partition[:]...)
		b = binary.AppendUvarint(b, uint64(len(p.Recs)))
		for i := range p.Recs {
			b = appendRecordFields(b, &p.Recs[i])
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.DLQ)))
	for i := range r.DLQ {
		x := &r.DLQ[i]
		b = append(b, x.Queue[:]...)
		b = appendRecordFields(b, &x.Rec)
		b = binary.AppendUvarint(b, uint64(len(x.Rec.Extra)))
		b = append(b, x.Rec.Extra...)
	}
	if len(r.Streams) > 0 {
		b = binary.AppendUvarint(b, uint64(len(r.Streams)))
		for i := range r.Streams {
			b = streams.AppendChange(b, &r.Streams[i])
		}
	}
	return b
}

// encodedSizeBound is at least len(r.Encode()), so that encode allocates
// once instead of growing its buffer field by field (6 allocations of a
// streams cycle's entry). Varints count 10 bytes, the most they take.
func (r *TxRecord) encodedSizeBound() int {
	const v = binary.MaxVarintLen64
	state := func(s *lease.State) int { return 16 + len(s.Lease.WorkerID) + 7*v }
	rec := func(x *segment.Record) int {
		return 16 + len(x.TransactionID) + len(x.TraceID) + len(x.ProducerSub) + len(x.Payload) + 4*v
	}
	n := 1 + 16 + 4*v + 1
	for i := range r.States {
		s := &r.States[i]
		n += 16 + len(s.Group) + v + 1 + state(&s.Pre) + state(&s.Post)
	}
	for i := range r.Pushes {
		n += 16 + v
		for j := range r.Pushes[i].Recs {
			n += rec(&r.Pushes[i].Recs[j])
		}
	}
	for i := range r.DLQ {
		n += 16 + rec(&r.DLQ[i].Rec) + v + len(r.DLQ[i].Rec.Extra)
	}
	if len(r.Streams) > 0 {
		n += v
		for i := range r.Streams {
			n += streams.ChangeSizeBound(&r.Streams[i])
		}
	}
	return n
}

// DecodeTx decodes a Tx entry payload; ErrTx for anything else. It never
// panics: counts are bounded by the remaining bytes.
func DecodeTx(b []byte) (TxRecord, error) {
	var r TxRecord
	if len(b) < 1 || (b[0] != 1 && b[0] != 2) {
		return r, ErrTx
	}
	d := &fieldReader{record.Fields{B: b[1:]}}
	r.TxID = d.ID()
	r.TS = d.Varint()
	count := func() int {
		n := d.Uvarint()
		if n > uint64(len(d.B)) {
			d.Err = record.ErrFields
			return 0
		}
		return int(n)
	}
	for n := count(); n > 0 && d.Err == nil; n-- {
		var s TxState
		s.Partition = d.ID()
		s.Group = d.String()
		if len(d.B) < 1 {
			d.Err = record.ErrFields
			break
		}
		s.HadPre = d.B[0] == 1
		d.B = d.B[1:]
		s.Pre = d.state()
		s.Post = d.state()
		r.States = append(r.States, s)
	}
	for n := count(); n > 0 && d.Err == nil; n-- {
		var p TxPush
		p.Partition = d.ID()
		for m := count(); m > 0 && d.Err == nil; m-- {
			p.Recs = append(p.Recs, d.record())
		}
		r.Pushes = append(r.Pushes, p)
	}
	for n := count(); n > 0 && d.Err == nil; n-- {
		var x TxDLQ
		x.Queue = d.ID()
		x.Rec = d.record()
		x.Rec.Extra = d.byteSlice()
		r.DLQ = append(r.DLQ, x)
	}
	if b[0] == 2 {
		for n := count(); n > 0 && d.Err == nil; n-- {
			r.Streams = append(r.Streams, streams.ReadChange(&d.Fields))
		}
	}
	if d.Err != nil || len(d.B) != 0 {
		return r, ErrTx
	}
	return r, nil
}

// fieldReader adds the redo record's composite fields to record.Fields.
type fieldReader struct{ record.Fields }
