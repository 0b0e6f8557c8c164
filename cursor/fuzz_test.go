package cursor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

// entry is one decoded body entry, for comparisons.
type entry struct {
	Kind    byte
	Key     Key
	State   lease.State
	Sub     subKey
	SubVal  Subscription
	Deleted bool
	Rec     string
}

type recorder struct{ got []entry }

func (r *recorder) state(k Key, s lease.State, del bool) {
	r.got = append(r.got, entry{Kind: tagState, Key: k, State: s, Deleted: del})
}
func (r *recorder) sub(k subKey, s Subscription, del bool) {
	r.got = append(r.got, entry{Kind: tagSub, Sub: k, SubVal: s, Deleted: del})
}
func (r *recorder) record(b []byte) { r.got = append(r.got, entry{Kind: tagRecord, Rec: string(b)}) }
func (r *recorder) dropRecords()    { r.got = append(r.got, entry{Kind: tagDropRecords}) }

func reencode(kind byte, seq uint64, es []entry) []byte {
	enc := newEncoder()
	enc.begin(kind, seq)
	for _, x := range es {
		switch x.Kind {
		case tagState:
			enc.state(x.Key, x.State, x.Deleted)
		case tagSub:
			enc.sub(x.Sub, x.SubVal, x.Deleted)
		case tagRecord:
			enc.record([]byte(x.Rec))
		case tagDropRecords:
			enc.dropRecords()
		}
	}
	return append([]byte(nil), enc.finish()...)
}

// sampleFrame is a frame with one entry of every kind.
func sampleFrame(kind byte) []byte {
	return reencode(kind, 7, []entry{
		{Kind: tagState, Key: Key{pid(1), "billing"}, State: lease.State{Committed: 12}},
		{Kind: tagState, Key: Key{pid(2), "billing"}, State: lease.State{Committed: 3, Retries: 1, Lease: lease.Lease{ID: pid(9), WorkerID: "w-1", Start: 4, End: 8, ExpiresAtMicros: 1_753_866_764_881_042, Attempts: 2}}},
		{Kind: tagState, Key: Key{pid(3), "__QUEUE_MODE__"}, Deleted: true},
		{Kind: tagSub, Sub: subKey{"orders", "billing"}, SubVal: Subscription{Mode: SubTimestamp, TimestampMicros: 5, CreatedAtMicros: 6}},
		{Kind: tagSub, Sub: subKey{"orders", "old"}, Deleted: true},
		{Kind: tagDropRecords},
		{Kind: tagRecord, Rec: "redo"},
	})
}

// fuzzFrame checks that decoding never panics and that whatever decodes
// re-encodes to a frame decoding to the same entries.
func fuzzFrame(t *testing.T, data []byte, kind byte) {
	h, body, n, err := decodeFrame(data, kind)
	if err != nil {
		return
	}
	require.LessOrEqual(t, n, len(data))
	var r recorder
	if decodeBody(body, &r) != nil {
		return
	}
	again := reencode(kind, h.seq, r.got)
	h2, body2, _, err := decodeFrame(again, kind)
	require.NoError(t, err)
	require.Equal(t, h.seq, h2.seq)
	var r2 recorder
	require.NoError(t, decodeBody(body2, &r2))
	require.Equal(t, r.got, r2.got)
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(sampleFrame(kindCheckpoint))
	f.Add(sampleFrame(kindCheckpoint)[:40])
	f.Add([]byte(magicCheckpoint))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFrame(t, data, kindCheckpoint) })
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(sampleFrame(kindSnapshot))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzFrame(t, data, kindSnapshot)
		_ = loadSnapshot(data, "fuzz", &recorder{})
	})
}

// TestSampleFrameDecodes pins the sample frame used by the corpus.
func TestSampleFrameDecodes(t *testing.T) {
	var r recorder
	_, body, _, err := decodeFrame(sampleFrame(kindCheckpoint), kindCheckpoint)
	require.NoError(t, err)
	require.NoError(t, decodeBody(body, &r))
	require.Len(t, r.got, 7)
	require.Equal(t, "w-1", r.got[1].State.Lease.WorkerID)
}

// FuzzDecodeBody skips the checksum so the fuzzer reaches the entry decoder.
func FuzzDecodeBody(f *testing.F) {
	f.Add(sampleFrame(kindCheckpoint)[frameHeaderLen:])
	f.Fuzz(func(t *testing.T, body []byte) {
		var r recorder
		if decodeBody(body, &r) != nil {
			return
		}
		again := reencode(kindCheckpoint, 1, r.got)
		var r2 recorder
		require.NoError(t, decodeBody(again[frameHeaderLen:], &r2))
		require.Equal(t, r.got, r2.got)
	})
}
