package walentry

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/streams"
)

// A TxRecord survives Encode and DecodeTx unchanged, in both versions.
func TestTxRecordRoundTrip(t *testing.T) {
	rec := TxRecord{TxID: uuid.Must(uuid.NewV7()), TS: 42,
		States: []TxState{{Partition: uuid.Must(uuid.NewV7()), Group: "g", HadPre: true}},
		Pushes: []TxPush{{Partition: uuid.Must(uuid.NewV7()), Recs: nil}},
		DLQ:    []TxDLQ{{Queue: uuid.Must(uuid.NewV7())}},
	}
	rec.States[0].Post.Committed = 7
	rec.States[0].Post.Lease.WorkerID = "w"
	rec.Pushes[0].Recs = append(rec.Pushes[0].Recs, rec.DLQ[0].Rec)
	rec.Pushes[0].Recs[0].TransactionID = "t"
	rec.Pushes[0].Recs[0].Payload = []byte(`{"x":1}`)
	rec.DLQ[0].Rec.Extra = []byte{1, 2}
	rec.DLQ[0].Rec.Payload = []byte("null")
	got, err := DecodeTx(rec.Encode())
	require.NoError(t, err)
	assert.Equal(t, rec, got)
	assert.Equal(t, byte(1), rec.Encode()[0], "a record without stream state is version 1, as before streams")

	rec.Streams = []streams.Change{{Query: [16]byte{7}, Partition: [16]byte{8},
		Ops: []streams.Op{{Kind: streams.OpUpsert, Key: "k", Value: []byte(`{}`), UpdatedAtMicros: 5}, {Kind: streams.OpDelete, Key: "d", UpdatedAtMicros: 5}}}}
	b := rec.Encode()
	assert.Equal(t, byte(2), b[0])
	got, err = DecodeTx(b)
	require.NoError(t, err)
	assert.Equal(t, rec, got)
	assert.LessOrEqual(t, len(b), rec.encodedSizeBound())
	assert.Equal(t, 1.0, testing.AllocsPerRun(10, func() { rec.Encode() }), "encode sizes its buffer once")
}

func FuzzDecodeTx(f *testing.F) {
	rec := TxRecord{TxID: uuid.Must(uuid.NewV7()), TS: 1, States: []TxState{{Group: "g"}}, Pushes: []TxPush{{Recs: nil}}}
	f.Add(rec.Encode())
	f.Add([]byte{1})
	rec.Streams = []streams.Change{{Ops: []streams.Op{{Kind: streams.OpUpsert, Key: "k", Value: []byte("1")}, {Kind: streams.OpDelete, Key: "d"}}}}
	f.Add(rec.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeTx(b)
		if err != nil {
			return
		}
		enc := r.Encode()
		require.LessOrEqual(t, len(enc), r.encodedSizeBound())
		_, err = DecodeTx(enc)
		require.NoError(t, err)
	})
}

func FuzzDecodeDLQMeta(f *testing.F) {
	m := DLQMeta{Group: "g", Error: "boom", TransactionID: "t", RetryCount: 3, Offset: 9}
	f.Add(m.Encode(nil))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeDLQMeta(b)
		if err != nil {
			return
		}
		again, err := DecodeDLQMeta(m.Encode(nil))
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}
