package report

import (
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec 7.6: GET /api/v1/consumer-groups/:group and /lagging.
func TestGroupDetailAndLaggingPartitions(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b", "c")
	pushedAt := e.clk.Now().Add(-time.Millisecond).UnixMicro() // push advanced the clock 1 ms
	e.push("q", "p2", "x")
	e.push("r", "Default", "y")

	r := e.pop(broker.PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w1"})
	require.Equal(t, []string{"a"}, txids(r))
	require.True(t, e.ack("g", r, "completed")[0].Success)
	r = e.pop(broker.PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w1"})
	require.Equal(t, []string{"b"}, txids(r))
	e.pop(broker.PopRequest{Queue: "r", Group: "g", AutoAck: true})
	e.clk.Advance(2 * time.Hour)

	assert.Equal(t, []GroupPartition{
		{Queue: "q", Partition: "p1", PartitionID: e.partitionID("q", "p1"), WorkerID: "",
			LastConsumedAtMicros: pushedAt, TotalConsumed: 1, OffsetLag: 2, TimeLagSeconds: 7200, OldestUnconsumedAtMicros: pushedAt},
		{Queue: "r", Partition: "Default", PartitionID: e.partitionID("r", "Default"),
			LastConsumedAtMicros: pushedAt + 2000, TotalConsumed: 1},
	}, e.r.GroupDetail("g"), "the lease of b expired after 2 h: not active, no worker")
	assert.Empty(t, e.r.GroupDetail("nobody"))

	lag := e.r.LaggingPartitions(3600)
	require.Len(t, lag, 1)
	assert.Equal(t, "g", lag[0].Group)
	assert.Equal(t, "p1", lag[0].Partition)
	assert.Equal(t, int64(7200), lag[0].TimeLagSeconds)
	assert.Empty(t, e.r.LaggingPartitions(7200), "spec 7.6: strictly more than minLagSeconds")

	r = e.pop(broker.PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 1, WorkerID: "w2"})
	require.Equal(t, []string{"b"}, txids(r))
	d := e.r.GroupDetail("g")
	assert.True(t, d[0].LeaseActive)
	assert.Equal(t, "w2", d[0].WorkerID)
}
