package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/cursor"
)

// spec 7.6: GET /api/v1/consumer-groups/:group and /lagging.
func TestGroupDetailAndLaggingPartitions(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b", "c")
	pushedAt := e.clk.Now().Add(-time.Millisecond).UnixMicro() // push advanced the clock 1 ms
	e.push("q", "p2", "x")
	e.push("r", "Default", "y")

	r := e.pop(PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w1"})
	require.Equal(t, []string{"a"}, txids(r))
	require.True(t, e.ack("g", r, "completed")[0].Success)
	r = e.pop(PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w1"})
	require.Equal(t, []string{"b"}, txids(r))
	e.pop(PopRequest{Queue: "r", Group: "g", AutoAck: true})
	e.clk.Advance(2 * time.Hour)

	assert.Equal(t, []GroupPartition{
		{Queue: "q", Partition: "p1", PartitionID: e.b.lookupQueue("q").partition("p1").idStr, WorkerID: "",
			LastConsumedAtMicros: pushedAt, TotalConsumed: 1, OffsetLag: 2, TimeLagSeconds: 7200, OldestUnconsumedAtMicros: pushedAt},
		{Queue: "r", Partition: "Default", PartitionID: e.b.lookupQueue("r").partition("Default").idStr,
			LastConsumedAtMicros: pushedAt + 2000, TotalConsumed: 1},
	}, e.b.GroupDetail("g"), "the lease of b expired after 2 h: not active, no worker")
	assert.Empty(t, e.b.GroupDetail("nobody"))

	lag := e.b.LaggingPartitions(3600)
	require.Len(t, lag, 1)
	assert.Equal(t, "g", lag[0].Group)
	assert.Equal(t, "p1", lag[0].Partition)
	assert.Equal(t, int64(7200), lag[0].TimeLagSeconds)
	assert.Empty(t, e.b.LaggingPartitions(7200), "spec 7.6: strictly more than minLagSeconds")

	r = e.pop(PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w2"})
	require.Equal(t, []string{"b"}, txids(r))
	d := e.b.GroupDetail("g")
	assert.True(t, d[0].LeaseActive)
	assert.Equal(t, "w2", d[0].WorkerID)
}

// spec 7.5: the subscription timestamp of every record of the group changes;
// partitions born later start from it, existing cursors stay.
func TestSetSubscriptionTimestamp(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "old")
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"}).Messages)
	e.pop(PopRequest{Queue: "other", Group: "g"}) // second record, mode all
	e.push("q", "p2", "born-later")
	e.clk.Advance(time.Second)
	cut := e.clk.Now()
	e.push("q", "p3", "after-cut")

	n, err := e.b.SetSubscriptionTimestamp("g", cut.UnixMicro())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = e.b.SetSubscriptionTimestamp("nobody", cut.UnixMicro())
	require.NoError(t, err)
	assert.Equal(t, 0, n)

	s, ok := e.b.cur.Subscription("q", "g")
	require.True(t, ok)
	assert.Equal(t, cursor.SubNew, s.Mode)
	assert.Equal(t, cut.UnixMicro(), s.TimestampMicros)
	s, _ = e.b.cur.Subscription("other", "g")
	assert.Equal(t, cursor.SubTimestamp, s.Mode, "an all record takes the timestamp as a timestamp record")

	e.reopen() // the records are durable and the ready structures rebuilt
	got := txids(e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10, AutoAck: true}))
	assert.ElementsMatch(t, []string{"after-cut"}, got, "p2 and p3 had no cursor: both start at the new timestamp; p1's cursor stays at its end")
}
