// Package walentry defines the broker's commit-log entries: their kinds and
// payload layouts (docs/format.md, "The commit log"). The broker writes and
// replays them; comb fsck and dump read them. Package commitlog only frames
// them, as a kind byte and opaque bytes.
package walentry

import (
	"encoding/binary"
	"fmt"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/record"
)

// Entry kinds. Payloads:
//
//	Meta:       uvarint n | n × (uvarint length | meta.Record body)
//	Push:       partition id [16] | one segment exactly as appended to the
//	            partition's file (its header holds the base offset)
//	DLQ:        queue id [16] | one segment as appended to the queue's DLQ log
//	Checkpoint: a cursor checkpoint body (package cursor)
//	Tx:         a transaction commit (TxRecord, tx.go)
//	Note:       a message tombstone or trace event: a package notes body
//	Stream:     a stream query's registration or reset (streams.EncodeEntry)
const (
	Meta       byte = 1
	Push       byte = 2
	DLQ        byte = 3
	Checkpoint byte = 4
	Tx         byte = 5
	Note       byte = 6
	Stream     byte = 7
)

// SplitLog reads the 16-byte id that starts a Push or DLQ payload.
//
// Errors: for a payload shorter than an id.
func SplitLog(payload []byte) (id [16]byte, seg []byte, err error) {
	if len(payload) < 16 {
		return id, nil, fmt.Errorf("walentry: entry of %d bytes has no id", len(payload))
	}
	copy(id[:], payload)
	return id, payload[16:], nil
}

// EncodeMeta encodes recs as one Meta payload (all or nothing).
//
// Errors: meta.ErrRecordTooLarge, meta.ErrBody.
func EncodeMeta(recs ...meta.Record) ([]byte, error) {
	payload := binary.AppendUvarint(nil, uint64(len(recs)))
	for i := range recs {
		body, err := recs[i].AppendBody(nil)
		if err != nil {
			return nil, err
		}
		payload = binary.AppendUvarint(payload, uint64(len(body)))
		payload = append(payload, body...)
	}
	return payload, nil
}

// DecodeMeta decodes a Meta payload. It never panics on any input.
//
// Errors: meta.ErrBody or record.ErrFields (wrapped).
func DecodeMeta(payload []byte) ([]meta.Record, error) {
	d := record.Fields{B: payload}
	n := d.Uvarint()
	var out []meta.Record
	for i := uint64(0); i < n && d.Err == nil; i++ {
		r, err := meta.DecodeBody(d.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("walentry: metadata entry: %w", err)
	}
	return out, nil
}
