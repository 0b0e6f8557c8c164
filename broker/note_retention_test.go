package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/notes"
)

// Issue 13: trace events and tombstones go with their message's retention.
// When retention removes a message's segment file, one maintenance tick drops
// its notes, and they stay dropped after a restart; the notes of retained
// messages stay.
func TestNotesGoWithRetention(t *testing.T) {
	e := retentionEnv(t)
	e.configure("q", func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	for i := range 4 {
		e.push("q", "p", fmt.Sprintf("m%d", i+1))
	}
	e.clk.Advance(2 * time.Minute)
	e.push("q", "p", "m5") // the active file: never removed
	pid := e.part("q", "p").idStr
	for _, tx := range []string{"m1", "m5"} {
		_, err := e.b.AddTrace(TraceRequest{PartitionID: pid, TransactionID: tx, Names: []string{"n"}, Data: []byte(`1`)})
		require.NoError(t, err)
	}
	found, err := e.b.DeleteMessage(pid, "m2")
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, e.b.msgNotes.store.AnyDeleted())

	e.b.maintain(e.clk.Now())
	require.Equal(t, uint64(5), e.part("q", "p").log.FirstOffset(), "retention removed m1..m4")
	check := func() {
		t.Helper()
		require.False(t, e.b.msgNotes.store.AnyDeleted(), "m2's tombstone went with its file")
		require.Empty(t, e.b.msgNotes.store.Traces(notes.MessageRef{Partition: e.part("q", "p").id, Offset: 1}))
		names, total, err := e.b.TraceNames(50, 0)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, []TraceName{{Name: "n", Traces: 1, Messages: 1, LastSeenMicros: e.clk.Now().UnixMicro()}}, names)
		evs, err := e.b.Traces(pid, "m5")
		require.NoError(t, err)
		require.Len(t, evs, 1)
	}
	check()
	e.reopen()
	check()
}
