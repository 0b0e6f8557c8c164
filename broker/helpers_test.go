package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// testClock is an injectable clock (Config.Now) so lease expiry is tested
// without sleeping.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	t   *testing.T
	dir string
	clk *testClock
	b   *Broker
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
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
	b, err := Open(Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(), WakeTick: time.Millisecond})
	require.NoError(e.t, err)
	e.b = b
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
func (e *env) push(queue, partition string, txids ...string) []PushResult {
	e.t.Helper()
	items := make([]PushItem, len(txids))
	for i, tx := range txids {
		items[i] = PushItem{Queue: queue, Partition: partition, TransactionID: tx, Payload: []byte(`{"tx":"` + tx + `"}`)}
	}
	res, err := e.b.Push(items)
	require.NoError(e.t, err)
	e.clk.Advance(time.Millisecond)
	return res
}

func (e *env) pop(req PopRequest) PopResult {
	e.t.Helper()
	if req.Batch == 0 {
		req.Batch = 200
	}
	res, err := e.b.Pop(context.Background(), req)
	require.NoError(e.t, err)
	e.t.Cleanup(res.Release)
	return res
}

func txids(res PopResult) []string {
	out := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = m.TransactionID
	}
	return out
}

func (e *env) ack(group string, res PopResult, status string, only ...string) []AckResult {
	e.t.Helper()
	want := make(map[string]bool)
	for _, o := range only {
		want[o] = true
	}
	var items []AckItem
	for _, m := range res.Messages {
		if len(only) > 0 && !want[m.TransactionID] {
			continue
		}
		items = append(items, AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: status})
	}
	out, err := e.b.Ack(group, items)
	require.NoError(e.t, err)
	return out
}

func cursorKey(e *env, queue, partition, group string) cursor.Key {
	p := e.b.lookupQueue(queue).partition(partition)
	return cursor.Key{Partition: p.id, Group: group}
}

// crash stops the broker as kill -9 would: no flush pass, no final
// checkpoint, no clean marker; what was written stays as the page cache holds
// it. The LOCK is released so the directory can be opened again.
func (e *env) crash() {
	e.t.Helper()
	b := e.b
	e.b = nil
	b.closed.Store(true)
	close(b.closing)
	b.stopMaintenance()
	b.stopFlusher()
	b.inflight.Wait()
	b.wake.Close()
	b.cur.Abandon()
	if l, ok := b.wal.(localLog); ok {
		l.l.Abandon()
	}
	b.mu.Lock()
	for _, p := range b.parts {
		p.log.Close()
	}
	b.mu.Unlock()
	if b.elog != nil {
		b.elog.Close() // no sync: what the page cache holds stays
	}
	require.NoError(e.t, b.lockFile.Close())
}
