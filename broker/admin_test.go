package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/combmq/comb/lease"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeekToEndAndToTimestamp(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a")
	mid := e.clk.Now()
	e.push("q", "", "b")
	res := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 1})
	require.Equal(t, []string{"a"}, txids(res))

	sr, err := e.b.Seek("g", "q", true, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, sr.PartitionsUpdated)
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages, "spec 7.1 toEnd skips the backlog and releases the lease")

	_, err = e.b.Seek("g", "q", false, mid.Add(-time.Microsecond).UnixMicro())
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})), "spec 7.1: created after the timestamp")
	_, err = e.b.Seek("g", "q", false, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})), "1970 replays everything")

	sr, err = e.b.Seek("nobody", "q", true, 0)
	require.NoError(t, err)
	assert.Zero(t, sr.PartitionsUpdated, "partitions without a cursor are not touched")
}

func TestSeekPartition(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b")
	res, err := e.b.SeekPartition("g", "q", "p1")
	require.NoError(t, err)
	assert.True(t, res.Updated)
	assert.NotZero(t, res.CursorMovedToMicros)
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Partition: "p1", Group: "g"}).Messages)
	_, err = e.b.SeekPartition("g", "q", "nope")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, "Partition not found", err.Error())
}

func TestDeleteGroupResetsFirstContact(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a")
	e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"})
	n, err := e.b.DeleteGroup("g", "", true)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"a"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})),
		"spec 3.8: after delete the next first contact decides again")
	n, err = e.b.DeleteGroup("ghost", "q", true)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestDeleteQueueRemovesEverything(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a")
	e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"})
	pdir := filepath.Join(e.dir, "partitions", e.b.lookupQueue("q").partition("p1").idStr)
	existed, err := e.b.DeleteQueue("q")
	require.NoError(t, err)
	assert.True(t, existed)
	_, err = os.Stat(pdir)
	assert.True(t, os.IsNotExist(err), "partition files removed")
	_, ok := e.b.cur.Subscription("q", "g")
	assert.False(t, ok, "spec 11 #47: subscription records deleted too")
	existed, err = e.b.DeleteQueue("q")
	require.NoError(t, err)
	assert.False(t, existed, "idempotent")

	e.reopen()
	assert.Nil(t, e.b.lookupQueue("q"))
	r := e.push("q", "p1", "a")
	assert.Equal(t, PushQueued, r[0].Status, "a recreated queue has no old dedup keys")
	assert.Equal(t, []string{"a"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})))
}

// The engine's counters behind /metrics (View.Counters; package report adds
// the lag).
func TestViewCounters(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b")
	e.push("q", "p2", "c")
	e.pop(PopRequest{Queue: "q", Group: "g", Batch: 1, AutoAck: true})
	s := e.b.View().Counters()
	assert.Equal(t, 1, s.Queues)
	assert.Equal(t, 2, s.Partitions)
	assert.Equal(t, uint64(3), s.PushMessages)
	assert.Equal(t, uint64(1), s.PopMessages)
	assert.Zero(t, s.TotalLag, "the lag is package report's")
}

func TestRestartLosesNothing(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		e.push("q", "", string(rune('a'+i)))
	}
	res := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 2})
	e.ack("g", res, "completed")
	leased := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 1})
	require.Equal(t, []string{"c"}, txids(leased))
	e.reopen()
	assert.Equal(t, PushDuplicate, e.push("q", "", "a")[0].Status, "dedup survives")
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages, "the lease survives")
	assert.True(t, e.ack("g", leased, "completed")[0].Success, "and can be acked after the restart")
	assert.Equal(t, []string{"d", "e"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})), "cursors survive")
}

func TestOpenRefusesALockedDirectory(t *testing.T) {
	e := newEnv(t)
	_, err := Open(Config{DataDir: e.dir, Sync: "never", Logger: zerolog.Nop()})
	assert.ErrorIs(t, err, ErrLocked)
}

// A cursor past the high-water mark (messages lost with a weak sync policy)
// is clamped on Open, and a lease over lost messages dropped.
func TestRecoveryClampsCursorsToHighWaterMark(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b")
	k := cursorKey(e, "q", "Default", "g")
	e.b.cur.Set(k, lease.State{Committed: 9, Lease: lease.Lease{ID: newV7(), Start: 10, End: 12, ExpiresAtMicros: 1 << 60, Attempts: 1}})
	e.reopen()
	st, ok := e.b.cur.Get(k)
	require.True(t, ok)
	assert.Equal(t, lease.State{Committed: 2}, st)
	assert.Equal(t, PushQueued, e.push("q", "", "c")[0].Status)
	assert.Equal(t, []string{"c"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})))
}

func TestConfigureReplacesOptions(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.Priority = 5
	opts.MinPopWaitTime = 999999
	res, err := e.b.Configure(ConfigureRequest{Queue: "orders", Namespace: "billing", Task: "invoice", Options: opts})
	require.NoError(t, err)
	assert.Equal(t, int64(60000), res.Options.MinPopWaitTime, "spec 2.2: clamped to 60000")
	assert.NotEmpty(t, res.PartitionID)
	e.reopen()
	q := e.b.lookupQueue("orders")
	require.NotNil(t, q)
	c := q.conf.Load()
	assert.Equal(t, "billing", c.namespace)
	assert.Equal(t, int64(5), c.opts.Priority)
	res2, err := e.b.Configure(ConfigureRequest{Queue: "orders", Options: DefaultQueueOptions()})
	require.NoError(t, err)
	assert.Equal(t, res.QueueID, res2.QueueID)
	assert.Equal(t, res.PartitionID, res2.PartitionID)
	assert.Equal(t, "", res2.Namespace, "spec 2.1: a whole replace")
}
