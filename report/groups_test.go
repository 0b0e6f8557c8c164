package report

import (
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConsumerGroupsAndStats(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b")
	e.push("q", "p2", "c")
	e.pop(broker.PopRequest{Queue: "q", Group: "g", Batch: 1, AutoAck: true})
	e.clk.Advance(10 * time.Minute)
	rows := e.r.ConsumerGroups()
	require.Len(t, rows, 1)
	r := rows[0]
	assert.Equal(t, "g", r.Name)
	assert.Equal(t, "q", r.Queue)
	assert.Equal(t, 2, r.Members)
	assert.Equal(t, int64(2), r.TotalLag)
	assert.Equal(t, 2, r.PartitionsWithLag)
	assert.Equal(t, "Lagging", r.State)
	assert.Equal(t, "all", r.SubscriptionMode)
	s := e.r.Stats()
	assert.Equal(t, 1, s.Queues)
	assert.Equal(t, 2, s.Partitions)
	assert.Equal(t, uint64(3), s.PushMessages)
	assert.Equal(t, uint64(1), s.PopMessages)
	assert.Equal(t, int64(2), s.TotalLag, "b and c after the cursors")
}
