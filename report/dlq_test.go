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
