package notes

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/combmq/comb/record"
)

const (
	kindTombstone = 1
	kindTrace     = 2

	headerVersion = 1
	// headerFrameBytes is the header frame's size: a frame header and the
	// body version u8 | seed u64.
	headerFrameBytes = 16 + 9
	// maxBody bounds one record (a trace's data comes from an HTTP body,
	// which the server limits far below this).
	maxBody = 64 << 20
)

// The file's two frame kinds (package record): one header frame, then the
// records, whose checksums are seeded with the header's random seed (trace
// data are client bytes: they can never form a frame that verifies).
var (
	headerFormat = record.NewFormat("CMNH", 16)
	recordFormat = record.NewFormat("CMNR", maxBody)
)

// errRecord is a verified body that does not decode: a bug or a newer
// format, never a torn write.
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
type noteRecord struct {
	ref   MessageRef
	trace *Trace
}

// newHeader returns a header frame with a fresh random seed.
func newHeader() ([]byte, uint64, error) {
	var s [8]byte
	if _, err := rand.Read(s[:]); err != nil {
		return nil, 0, fmt.Errorf("notes: seed: %w", err)
	}
	seed := binary.LittleEndian.Uint64(s[:])
	body := append([]byte{headerVersion}, s[:]...)
	frame, err := headerFormat.Append(nil, body)
	return frame, seed, err
}

// readHeader decodes the header frame at the start of data and returns the
// seed and the header's length. Errors: record.ErrShort / ErrZero when the
// file was cut before its header was whole (a crash while creating it), any
// other for a header that is not one.
func readHeader(data []byte) (seed uint64, n int, err error) {
	body, n, err := headerFormat.Next(data)
	if err != nil {
		return 0, 0, err
	}
	if len(body) != 9 || body[0] != headerVersion {
		return 0, 0, fmt.Errorf("notes: header version %d (%d bytes) is not %d", body[0], len(body), headerVersion)
	}
	return binary.LittleEndian.Uint64(body[1:]), n, nil
}

// EncodeTombstone is the body of ref's tombstone: what Apply takes (and
// what the broker logs in its commit log before applying it).
func EncodeTombstone(ref MessageRef) []byte {
	b := make([]byte, 0, 1+16+binary.MaxVarintLen64)
	b = append(b, kindTombstone)
	b = append(b, ref.Partition[:]...)
	return binary.AppendUvarint(b, ref.Offset)
}

// EncodeTrace is the body of trace event t: what Apply takes.
func EncodeTrace(t *Trace) []byte {
	b := make([]byte, 0, 64+len(t.TransactionID)+len(t.Group)+len(t.EventType)+len(t.WorkerID)+len(t.Data))
	b = append(b, kindTrace)
	b = append(b, t.Partition[:]...)
	b = binary.AppendUvarint(b, t.Offset)
	b = append(b, t.ID[:]...)
	b = binary.AppendVarint(b, t.CreatedMicros)
	for _, s := range []string{t.TransactionID, t.Group, t.EventType, t.WorkerID} {
		b = record.AppendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Names)))
	for _, n := range t.Names {
		b = record.AppendString(b, n)
	}
	b = binary.AppendUvarint(b, uint64(len(t.Data)))
	return append(b, t.Data...)
}

// decodeBody decodes a verified body; an unknown kind or a short field is
// errRecord.
func decodeBody(body []byte) (noteRecord, error) {
	d := record.Fields{B: body}
	var rec noteRecord
	kind := d.Byte()
	rec.ref.Partition = d.ID()
	rec.ref.Offset = d.Uvarint()
	switch kind {
	case kindTombstone:
	case kindTrace:
		t := &Trace{MessageRef: rec.ref}
		t.ID = d.ID()
		t.CreatedMicros = d.Varint()
		t.TransactionID, t.Group, t.EventType, t.WorkerID = d.String(), d.String(), d.String(), d.String()
		n := d.Uvarint()
		if n > uint64(len(body)) {
			return rec, fmt.Errorf("%w: %d trace names", errRecord, n)
		}
		for i := uint64(0); i < n && d.Err == nil; i++ {
			t.Names = append(t.Names, d.String())
		}
		t.Data = append([]byte(nil), d.Bytes()...)
		rec.trace = t
	default:
		return rec, fmt.Errorf("%w: kind %d", errRecord, kind)
	}
	if err := d.End(); err != nil {
		return rec, fmt.Errorf("%w: %w", errRecord, err)
	}
	return rec, nil
}
