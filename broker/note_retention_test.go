package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/vfs"
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

// A note is durable once answered (its commit-log entry), whether a crash
// comes before the flush pass that syncs the notes file and truncates the log,
// or after it: both survive, neither twice.
func TestNotesSurviveACrashAroundAFlushPass(t *testing.T) {
	mem := vfs.NewMem()
	cfg := Config{DataDir: "/data", FS: mem, Logger: zerolog.Nop(), Now: newTestClock().Now}
	b, err := Open(cfg)
	require.NoError(t, err)
	defer b.Close()
	res, err := b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "a", Payload: []byte("1")},
		{Queue: "q", Partition: "p", TransactionID: "b", Payload: []byte("2")}})
	require.NoError(t, err)
	pid := res[0].PartitionID
	_, err = b.AddTrace(TraceRequest{PartitionID: pid, TransactionID: "a", Names: []string{"n"}, Data: []byte(`"before"`)})
	require.NoError(t, err)
	require.NoError(t, b.flushPass()) // the notes file synced, the log truncated past the entry
	found, err := b.DeleteMessage(pid, "b")
	require.NoError(t, err)
	require.True(t, found)
	_, err = b.AddTrace(TraceRequest{PartitionID: pid, TransactionID: "a", Data: []byte(`"after"`)})
	require.NoError(t, err)

	b2, err := Open(Config{DataDir: "/data", FS: mem.Crash(true), Logger: zerolog.Nop(), Now: cfg.Now})
	require.NoError(t, err)
	defer b2.Close()
	evs, err := b2.Traces(pid, "a")
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.Equal(t, `"before"`, string(evs[0].Data))
	require.Equal(t, `"after"`, string(evs[1].Data))
	_, err = findMsg(b2, pid, "b")
	require.ErrorIs(t, err, ErrNotFound, "the delete survived")
	res2, err := b2.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, Partitions: 1, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, txids(res2))
}

// A deleted message's dead letter stays hidden after retention removes the message's file: the
// DLQ's active file outlives it (retention cuts DLQ files by the time of failure, and never the
// active one), and the listing hides the entry by the message's tombstone, which retention used
// to drop with the file, bringing the dead letter back in the DLQ listing and counts. The
// tombstone is kept while the DLQ holds the entry, also across a restart.
func TestADeletedDeadLetterStaysHiddenAfterRetention(t *testing.T) {
	e := retentionEnv(t)
	e.configure("q", func(o *QueueOptions) {
		o.RetentionEnabled, o.RetentionSeconds = true, 60
		o.RetryLimit, o.DeadLetterQueue, o.DLQAfterMaxRetries = 0, true, true
	})
	for i := range 4 {
		e.push("q", "p", fmt.Sprintf("m%d", i+1))
	}
	res := e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 2})
	require.Len(t, res.Messages, 2)
	out := e.ack("g", res, "failed", "m2")
	require.True(t, out[0].DLQ, "m2 went to the DLQ")
	res.Release()
	pid := e.part("q", "p").idStr
	found, err := e.b.DeleteMessage(pid, "m2")
	require.NoError(t, err)
	require.True(t, found)
	m2 := notes.MessageRef{Partition: e.part("q", "p").id, Offset: 2}

	e.clk.Advance(2 * time.Minute)
	e.push("q", "p", "m5") // the active file: never removed
	e.b.maintain(e.clk.Now())
	require.Equal(t, uint64(5), e.part("q", "p").log.FirstOffset(), "retention removed m1..m4")
	require.True(t, e.b.msgNotes.store.Deleted(m2), "the DLQ still holds m2's dead letter: its tombstone stays")

	e.reopen()
	e.b.maintain(e.clk.Now())
	require.True(t, e.b.msgNotes.store.Deleted(m2), "still held after a restart")
	var refs []notes.MessageRef
	e.b.eachDeadLetterRef(e.b.lookupQueue("q"), func(r notes.MessageRef) { refs = append(refs, r) })
	require.Equal(t, []notes.MessageRef{m2}, refs, "the dead letter is there, hidden by the tombstone")
}
