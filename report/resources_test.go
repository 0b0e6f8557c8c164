package report

import (
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResourceCountsFollowCursorsAndLeases(t *testing.T) {
	e := newEnv(t)
	e.push("ns.q", "p", "a", "b", "c", "d", "e")
	e.push("ns.q", "p2", "x")
	res := e.pop(broker.PopRequest{Queue: "ns.q", Partition: "p", Batch: 2})
	e.ack(broker.QueueModeGroup, res, "completed")
	e.pop(broker.PopRequest{Queue: "ns.q", Partition: "p", Batch: 1}) // c leased

	d, ok := e.r.ResourceQueue("ns.q", PartitionPage{})
	require.True(t, ok)
	cases := []struct {
		name string
		got  MessageCounts
		want MessageCounts
	}{
		{"partition p: 2 completed, 1 under a live lease, 2 pending", d.PartitionList[0].Stats, MessageCounts{Total: 5, Pending: 2, Processing: 1, Completed: 2}},
		{"partition p2: untouched", d.PartitionList[1].Stats, MessageCounts{Total: 1, Pending: 1}},
		{"queue totals add up", d.Messages, MessageCounts{Total: 6, Pending: 3, Processing: 1, Completed: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, c.got) })
	}
	assert.Equal(t, "p", d.PartitionList[0].Name)
	assert.Equal(t, "ns", d.Namespace)
	assert.Equal(t, 2, d.Partitions)
	assert.NotZero(t, d.PartitionList[0].OldestMicros)
	assert.Less(t, d.PartitionList[0].OldestMicros, d.PartitionList[1].NewestMicros)

	e.clk.Advance(10 * time.Minute) // the 300 s default lease expires: its span counts as pending again
	d, _ = e.r.ResourceQueue("ns.q", PartitionPage{})
	assert.Equal(t, MessageCounts{Total: 5, Pending: 3, Completed: 2}, d.PartitionList[0].Stats)

	_, ok = e.r.ResourceQueue("nope", PartitionPage{})
	assert.False(t, ok, "unknown queue")
}

func TestResourceCountsForNamedGroupsOnly(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a", "b", "c")
	for _, g := range []string{"g1", "g2"} {
		e.pop(broker.PopRequest{Queue: "q", Group: g, Batch: 1, AutoAck: true})
	}
	e.pop(broker.PopRequest{Queue: "q", Group: "g1", Batch: 1, AutoAck: true})
	d, _ := e.r.ResourceQueue("q", PartitionPage{})
	assert.Equal(t, MessageCounts{Total: 3, Pending: 2, Completed: 1}, d.Messages, "completed = consumed by every group")
}

func TestResourceQueuesNewestFirstFilteredAndPaged(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"a.one", "b.two", "a.three", "plain"} {
		e.push(q, "p", "m")
		e.clk.Advance(time.Second)
	}
	names := func(rs []ResourceQueue) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	cases := []struct {
		name string
		f    ResourceFilter
		want []string
	}{
		{"all, newest first", ResourceFilter{}, []string{"plain", "a.three", "b.two", "a.one"}},
		{"namespace filter", ResourceFilter{Namespace: "a"}, []string{"a.three", "a.one"}},
		{"limit", ResourceFilter{Limit: 2}, []string{"plain", "a.three"}},
		{"offset past the end", ResourceFilter{Offset: 10}, []string{}},
		{"offset and limit", ResourceFilter{Offset: 1, Limit: 2}, []string{"a.three", "b.two"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, names(e.r.ResourceQueues(c.f))) })
	}
	ns := e.r.ResourceNamespaces()
	require.Len(t, ns, 3, "a name without a dot is its own namespace (spec 1.3)")
	assert.Equal(t, ResourceLabel{Name: "a", Queues: 2, Partitions: 2, Messages: MessageCounts{Total: 2, Pending: 2}}, ns[0])
	assert.Equal(t, []string{"b", "plain"}, []string{ns[1].Name, ns[2].Name})
	tasks := e.r.ResourceTasks()
	require.Len(t, tasks, 3, "queues without a task are left out")
	assert.Equal(t, []string{"one", "three", "two"}, []string{tasks[0].Name, tasks[1].Name, tasks[2].Name})
}

func TestResourcesOverview(t *testing.T) {
	e := newEnv(t)
	e.push("a.q", "p", "m1", "m2")
	e.push("b.q", "p", "m3")
	e.pop(broker.PopRequest{Queue: "b.q", AutoAck: true})
	e.clk.Advance(10 * time.Second)
	o := e.r.ResourcesOverview()
	assert.Equal(t, 2, o.Queues)
	assert.Equal(t, 2, o.Partitions)
	assert.Equal(t, 2, o.Namespaces)
	assert.Equal(t, MessageCounts{Total: 3, Pending: 2, Completed: 1}, o.Messages)
	assert.Equal(t, LagStats{Avg: 2, Median: 2, Min: 2, Max: 2}, o.OffsetLag)
	assert.InDelta(t, 10.002, o.TimeLagSeconds.Max, 0.01, "age of the oldest pending message")
	assert.Equal(t, e.clk.Now().UnixMicro(), o.NowMicros)
}

func TestResourceCountsHideHeldMessages(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	_, err := e.b.SetPushMaintenance(true)
	require.NoError(t, err)
	e.push("q", "p", "b")
	d, _ := e.r.ResourceQueue("q", PartitionPage{})
	assert.Equal(t, int64(1), d.Messages.Total)
}

// A page lists its window of partitions (oldest first) while the totals and
// the partition count still cover the whole queue.
func TestResourceQueuePage(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"p0", "p1", "p2", "p3", "p4"} {
		e.push("q", p, "a-"+p, "b-"+p)
		e.clk.Advance(time.Second)
	}
	cases := []struct {
		name string
		page PartitionPage
		want []string
	}{
		{"all", PartitionPage{}, []string{"p0", "p1", "p2", "p3", "p4"}},
		{"the first two", PartitionPage{Limit: 2}, []string{"p0", "p1"}},
		{"two from the fourth", PartitionPage{Offset: 3, Limit: 2}, []string{"p3", "p4"}},
		{"past the end", PartitionPage{Offset: 5, Limit: 2}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := e.r.ResourceQueue("q", c.page)
			require.True(t, ok)
			var got []string
			for _, rp := range d.PartitionList {
				got = append(got, rp.Name)
				assert.NotZero(t, rp.OldestMicros, rp.Name)
			}
			assert.Equal(t, c.want, got)
			assert.Equal(t, 5, d.Partitions)
			assert.Equal(t, MessageCounts{Total: 10, Pending: 10}, d.Messages)
		})
	}
}
