package walentry

import (
	"encoding/binary"
	"errors"

	"github.com/combmq/comb/record"
)

// DLQMeta is what a dead letter keeps beside the message (spec 4.5), stored
// in segment.Record.Extra of the queue's DLQ log (the records of a DLQ entry,
// and of a TxRecord's DLQ):
//
//	ver u8 (1) | partition id [16] | createdAt varint µs | failedAt varint µs |
//	retryCount uvarint | offset uvarint | group str | error str | transactionId str
//
// (str = uvarint length + bytes). The record's own TransactionID is a unique
// key of the entry (so a replayed transaction writes it once), its ID the
// message id.
type DLQMeta struct {
	PartitionID   [16]byte
	CreatedAt     int64
	FailedAt      int64
	RetryCount    int64
	Offset        uint64
	Group         string
	Error         string
	TransactionID string
}

// ErrDLQMeta is returned by DecodeDLQMeta for bytes that are not a DLQMeta.
var ErrDLQMeta = errors.New("dlq entry: malformed metadata")

// Encode appends m to b.
func (m *DLQMeta) Encode(b []byte) []byte {
	b = append(b, 1)
	b = append(b, m.PartitionID[:]...)
	b = binary.AppendVarint(b, m.CreatedAt)
	b = binary.AppendVarint(b, m.FailedAt)
	b = binary.AppendUvarint(b, uint64(m.RetryCount))
	b = binary.AppendUvarint(b, m.Offset)
	b = record.AppendString(b, m.Group)
	b = record.AppendString(b, m.Error)
	return record.AppendString(b, m.TransactionID)
}

// DecodeDLQMeta decodes what Encode wrote; ErrDLQMeta for anything else.
func DecodeDLQMeta(b []byte) (DLQMeta, error) {
	var m DLQMeta
	if len(b) < 1 || b[0] != 1 {
		return m, ErrDLQMeta
	}
	d := &record.Fields{B: b[1:]}
	m.PartitionID = d.ID()
	m.CreatedAt = d.Varint()
	m.FailedAt = d.Varint()
	m.RetryCount = int64(d.Uvarint())
	m.Offset = d.Uvarint()
	m.Group = d.String()
	m.Error = d.String()
	m.TransactionID = d.String()
	if d.Err != nil || len(d.B) != 0 {
		return m, ErrDLQMeta
	}
	return m, nil
}
