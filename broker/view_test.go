package broker

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// The flush pass's figures (GET /api/v1/storage through package report):
// one pass more after each pass, with its end and no error.
func TestViewFlushStatus(t *testing.T) {
	b, err := Open(Config{DataDir: t.TempDir(), Sync: "always", FlushInterval: time.Hour, Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "t1", Payload: []byte(`{"n":1}`)}})
	require.NoError(t, err)
	passes := b.View().FlushStatus().Passes // Open may run one

	before := time.Now()
	require.NoError(t, b.flushPass())
	s := b.View().FlushStatus()
	require.Equal(t, passes+1, s.Passes)
	require.GreaterOrEqual(t, s.LastEndMicros, before.UnixMicro(), "the pass ended after it started")
	require.GreaterOrEqual(t, s.LastDurationMicros, int64(0))
	require.Empty(t, s.LastErr)
}

// A View's handles read what the engine holds: the queue, its partitions,
// the cursor a pop moved and the message its dedup index finds.
func TestViewHandles(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a", "b")
	e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 1, AutoAck: true})
	v := e.b.View()
	q, ok := v.Queue("q")
	require.True(t, ok)
	_, ok = v.Queue("nope")
	require.False(t, ok)
	parts := q.Partitions()
	require.Len(t, parts, 1)
	p := parts[0]
	require.Equal(t, "p", p.Name())
	require.Equal(t, uint64(3), p.Visible(), "offsets start at 1: two messages")
	require.Equal(t, uint64(1), p.LiveFrom())
	require.Contains(t, q.Groups(), "g")
	st, ok := v.Cursor(p.ID(), "g")
	require.True(t, ok)
	require.Equal(t, uint64(1), st.Committed)
	byID, ok := v.Partition(p.ID())
	require.True(t, ok)
	require.Equal(t, p, byID)
	got, m, err := v.FindMessage(p.IDString(), "b")
	require.NoError(t, err)
	require.Equal(t, p, got)
	require.Equal(t, uint64(2), m.Offset)
	_, _, err = v.FindMessage(p.IDString(), "zz")
	require.ErrorIs(t, err, ErrNotFound)
	n := 0
	require.NoError(t, q.WithDLQ(func(DLQLog) { n++ }))
	require.Zero(t, n, "no DLQ log: fn is not called")
}
