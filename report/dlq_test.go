package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// spec 8.6: the DLQ listing filters by queue, group and partition, sorts by
// failedAt descending and pages; total counts every match.
func TestDLQFiltersSortsAndPages(t *testing.T) {
	e := newEnv(t)
	opts := broker.DefaultQueueOptions()
	opts.RetryLimit = 0
	_, err := e.b.Configure(broker.ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p1", "a")
	e.push("q", "p2", "b")
	for _, p := range []string{"p1", "p2"} {
		res := e.pop(broker.PopRequest{Queue: "q", Partition: p, Group: "g"})
		e.ack("g", res, "failed")
		e.clk.Advance(time.Second)
	}
	tx := func(es []DLQEntry) []string {
		out := make([]string, len(es))
		for i, d := range es {
			out[i] = d.TransactionID
		}
		return out
	}
	cases := []struct {
		name  string
		f     DLQFilter
		want  []string
		total int
	}{
		{"every entry, newest failure first", DLQFilter{}, []string{"b", "a"}, 2},
		{"by queue", DLQFilter{Queue: "q"}, []string{"b", "a"}, 2},
		{"by partition name", DLQFilter{Partition: "p1"}, []string{"a"}, 1},
		{"by group", DLQFilter{Group: "nobody"}, []string{}, 0},
		{"paged", DLQFilter{Limit: 1, Offset: 1}, []string{"a"}, 2},
		{"past the end", DLQFilter{Offset: 5}, []string{}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, total, err := e.r.DLQ(c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, tx(got))
			assert.Equal(t, c.total, total)
		})
	}
	got, _, err := e.r.DLQ(DLQFilter{Partition: "p2"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "q", got[0].Queue)
	assert.Equal(t, "p2", got[0].Partition)
	assert.Equal(t, "g", got[0].Group)
	assert.Equal(t, e.partitionID("q", "p2"), got[0].PartitionID)
	assert.Equal(t, `{"tx":"b"}`, string(got[0].Payload))
}

// A dead letter whose message DELETE /api/v1/messages removed leaves the
// DLQ's counts as it leaves its listing: the queue's deadLetter, each
// partition's, the status summary's and queen_dlq_depth_by_queue, also when
// the counts were cached before the deletion.
func TestDeletedDeadLettersLeaveTheCounts(t *testing.T) {
	e := newEnv(t)
	opts := broker.DefaultQueueOptions()
	opts.RetryLimit = 0
	_, err := e.b.Configure(broker.ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p1", "a")
	e.push("q", "p2", "b")
	var partOf = map[string]string{}
	for _, p := range []string{"p1", "p2"} {
		res := e.pop(broker.PopRequest{Queue: "q", Partition: p, Group: "g"})
		require.Len(t, res.Messages, 1)
		partOf[p] = res.Messages[0].PartitionID
		e.ack("g", res, "failed")
	}
	counts := func() (queue, p1, p2, depth int64) {
		d, ok := e.r.ResourceQueue("q", PartitionPage{})
		require.True(t, ok)
		for _, rp := range d.PartitionList {
			switch rp.Name {
			case "p1":
				p1 = rp.Stats.DeadLetter
			case "p2":
				p2 = rp.Stats.DeadLetter
			}
		}
		e.r.DLQDepths(func(name string, n int64) {
			if name == "q" {
				depth = n
			}
		})
		return d.Messages.DeadLetter, p1, p2, depth
	}
	q, p1, p2, depth := counts()
	assert.Equal(t, []int64{2, 1, 1, 2}, []int64{q, p1, p2, depth}, "before the deletion")

	found, err := e.b.DeleteMessage(partOf["p1"], "a")
	require.NoError(t, err)
	require.True(t, found)
	q, p1, p2, depth = counts()
	assert.Equal(t, []int64{1, 0, 1, 1}, []int64{q, p1, p2, depth}, "after it: a is gone from every count")
	got, total, err := e.r.DLQ(DLQFilter{Queue: "q"})
	require.NoError(t, err)
	assert.Equal(t, 1, total)
	assert.Equal(t, "b", got[0].TransactionID)
}
