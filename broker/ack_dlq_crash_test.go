package broker

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// dlqPowerEnv is a broker on a strict twin behind an errorfs.FS, with one queue
// whose messages go to the DLQ on their first failure.
type dlqPowerEnv struct {
	t   *testing.T
	mem *vfs.Mem
	fy  *errorfs.FS
	b   *Broker
	clk *testClock
}

func newDLQPowerEnv(t *testing.T, mem *vfs.Mem, clk *testClock, configure bool) *dlqPowerEnv {
	t.Helper()
	fy := errorfs.New(mem)
	cfg := syncFSFlushConfig(fy, false)
	cfg.Now = clk.Now
	b, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	if configure {
		opts := DefaultQueueOptions()
		opts.RetryLimit, opts.LeaseTime, opts.DeadLetterQueue, opts.DLQAfterMaxRetries = 0, 1, true, true
		_, err = b.Configure(ConfigureRequest{Queue: "q", Options: opts})
		require.NoError(t, err)
	}
	return &dlqPowerEnv{t: t, mem: mem, fy: fy, b: b, clk: clk}
}

// failOne pops one message of group g and acks it failed, calling before
// (when not nil) between the two; it returns the message's transactionId
// ("" when nothing was delivered) and the ack's error.
func (e *dlqPowerEnv) failOne(g string, before func()) (string, error) {
	e.t.Helper()
	res, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Group: g, Batch: 1})
	require.NoError(e.t, err)
	defer res.Release()
	if len(res.Messages) == 0 {
		return "", nil
	}
	m := res.Messages[0]
	if before != nil {
		before()
	}
	_, err = e.b.Ack(g, []AckItem{{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: "failed", Error: "boom"}})
	return m.TransactionID, err
}

// writeBack makes every file and name under dir durable behind the broker's
// back: the page cache writing back what nobody synced, as a power cut may
// find it.
func writeBack(t *testing.T, mem *vfs.Mem, dir string) {
	t.Helper()
	names, err := mem.List(dir)
	require.NoError(t, err)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if f, err := mem.OpenFile(p, 0); err == nil {
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			continue
		}
		writeBack(t, mem, p)
	}
	require.NoError(t, mem.SyncDir(dir))
}

// Issue 21: a dead letter whose commit-log entry a power cut lost is not
// kept. The ack that wrote it was never answered and its cursor move is lost
// with the entry, so the message is delivered again; failing again must
// dead-letter it once, not add a second entry beside the first one's bytes
// that the page cache happened to write back. Before the fix, the DLQ log
// (with no summary entry and no commit-log segment) was opened after
// recovery by segment.Open, which keeps every record its files hold.
func TestDLQRecordWhoseCommitLogEntryWasLostIsCutAtRecovery(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	clk := newTestClock()
	e := newDLQPowerEnv(t, mem, clk, true)
	_, err := e.b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`"a"`)}})
	require.NoError(t, err)
	require.NoError(t, e.b.flushPass()) // summaries and a metadata snapshot; no DLQ yet

	// The ack's commit-log entry never becomes durable: its fdatasync fails.
	tx, err := e.failOne("g", func() { e.fy.Inject(errorfs.Fault{Op: errorfs.OpSync, Under: "/data/commitlog"}) })
	require.Equal(t, "a", tx)
	require.Error(t, err, "the ack is not answered success")
	writeBack(t, mem, filepath.Join("/data", meta.DLQDir))
	require.NoError(t, mem.SyncDir("/data"))
	crashed := mem.Crash(false)
	_ = e.b.Close()

	clk.Advance(2 * time.Second) // the pop's lease (1 s, durable) expires
	e2 := newDLQPowerEnv(t, crashed, clk, false)
	_, total, err := listDLQ(e2.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	assert.Equal(t, 0, total, "no dead letter whose commit-log entry was lost")
	tx, err = e2.failOne("g", nil)
	require.NoError(t, err)
	require.Equal(t, "a", tx, "the unanswered ack is lost with its entry: delivered again")
	entries, total, err := listDLQ(e2.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	require.Equal(t, 1, total, "dead-lettered once")
	assert.Equal(t, "a", entries[0].TransactionID)
}

// Issue 21 (found by fsck/powertest, seed 300): an ack's dead letter and the
// checkpoint that moves the cursor past its message are two commit-log
// entries, so a power cut between their syncs keeps the dead letter and
// delivers the message again. Its next failure must find the dead letter
// stored (ackDLQKey), not write a second one; another group's failure of the
// same message is its own dead letter.
func TestAMessageFailsIntoTheDLQOncePerGroup(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	e := newDLQPowerEnv(t, mem, newTestClock(), true)
	_, err := e.b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`"a"`)}})
	require.NoError(t, err)
	p := e.b.lookupQueue("q").partition("Default")
	fail := func(group string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		require.NoError(t, e.b.writeDLQLocked(p, []dlqItem{{offset: p.log.NextOffset() - 1, group: group, errMsg: "boom"}}, 1, "Retries exhausted", ""))
	}
	fail("g")
	fail("g") // the same failure after the cursor move was lost
	entries, total, err := listDLQ(e.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	require.Equal(t, 1, total, "dead-lettered once for g")
	assert.Equal(t, "g", entries[0].Group)
	assert.Equal(t, "a", entries[0].TransactionID)

	fail("h")
	_, total, err = listDLQ(e.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	assert.Equal(t, 2, total, "h's failure is its own dead letter")
}
