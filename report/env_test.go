package report

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/clock/clocktest"
)

// The reports' tests drive a real broker through its public API (package
// broker's own tests cover the engine) and read it back through Reports.

type env struct {
	t   *testing.T
	dir string
	clk *clocktest.Fake // Config.Now: lease expiry and lags are tested without sleeping
	b   *broker.Broker
	r   *Reports
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: clocktest.NewFake(time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC))}
	e.open()
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return e
}

func (e *env) open() {
	e.t.Helper()
	b, err := broker.Open(broker.Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(), WakeTick: time.Millisecond})
	require.NoError(e.t, err)
	e.b, e.r = b, New(b.View())
}

// reopen closes the broker cleanly and opens the same directory again.
func (e *env) reopen() {
	e.t.Helper()
	require.NoError(e.t, e.b.Close())
	e.b = nil
	e.open()
}

// push pushes one segment of messages with the given transactionIds to
// (queue, partition) and advances the clock 1 ms so segments differ in time.
func (e *env) push(queue, partition string, txids ...string) []broker.PushResult {
	e.t.Helper()
	items := make([]broker.PushItem, len(txids))
	for i, tx := range txids {
		items[i] = broker.PushItem{Queue: queue, Partition: partition, TransactionID: tx, Payload: []byte(`{"tx":"` + tx + `"}`)}
	}
	res, err := e.b.Push(items)
	require.NoError(e.t, err)
	e.clk.Advance(time.Millisecond)
	return res
}

func (e *env) pop(req broker.PopRequest) broker.PopResult {
	e.t.Helper()
	if req.Batch == 0 {
		req.Batch = 200
	}
	res, err := e.b.Pop(context.Background(), req)
	require.NoError(e.t, err)
	e.t.Cleanup(res.Release)
	return res
}

func txids(res broker.PopResult) []string {
	out := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.TransactionID
	}
	return out
}

func (e *env) ack(group string, res broker.PopResult, status string, only ...string) []broker.AckResult {
	e.t.Helper()
	want := make(map[string]bool)
	for _, o := range only {
		want[o] = true
	}
	var items []broker.AckItem
	for _, m := range res.Messages {
		if len(only) > 0 && !want[m.TransactionID] {
			continue
		}
		items = append(items, broker.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: status})
	}
	out, err := e.b.Ack(group, items)
	require.NoError(e.t, err)
	return out
}

// partitionID is the id of (queue, partition) as the routes write it.
func (e *env) partitionID(queue, partition string) string {
	e.t.Helper()
	q, ok := e.b.View().Queue(queue)
	require.True(e.t, ok, queue)
	p, ok := q.Partition(partition)
	require.True(e.t, ok, partition)
	return p.IDString()
}
