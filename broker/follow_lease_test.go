package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/stretchr/testify/require"
)

// clockPerDir gives each node of a test cluster its own fake clock (by data
// directory, so a reopened node keeps its clock): conf for startInmemClusterConf.
type clockPerDir struct {
	mu     sync.Mutex
	clocks map[string]*testClock
}

func (c *clockPerDir) conf(cfg *Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clocks == nil {
		c.clocks = map[string]*testClock{}
	}
	clk := c.clocks[cfg.DataDir]
	if clk == nil {
		clk = newTestClock()
		c.clocks[cfg.DataDir] = clk
	}
	cfg.Now = clk.Now
}

func (c *clockPerDir) of(n *clusterNode) *testClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clocks[n.dir]
}

// TestANewLeaderWhoseClockIsAheadKeepsTheOldLeadersLeases: issue 22, leases
// that do not trust wall clocks across nodes. The followers' clocks are an
// hour ahead of the leader's. A pop's 300 s lease reaches them in a
// checkpoint, which each rebases on its own clock; the leader dies and one
// of them leads: it does not hand the leased message out again (by its clock
// the leader's expiresAt passed an hour ago) until 300 s after it applied the
// claim, by its own clock; then it does, as a second attempt.
func TestANewLeaderWhoseClockIsAheadKeepsTheOldLeadersLeases(t *testing.T) {
	var clocks clockPerDir
	nodes, _ := startInmemClusterConf(t, 3, fastRaft, clocks.conf)
	leader := waitLeader(t, nodes)
	followers := followersOf(nodes, leader)
	for _, f := range followers {
		clocks.of(f).Advance(time.Hour)
	}
	pid, leaseID := pushPop(t, nodes, leader, "q", "g", 1)
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "g"}
	lst, ok := leader.b.cur.Get(key)
	require.True(t, ok)
	d := time.Duration(lst.Lease.ExpiresAtMicros-clocks.of(leader).Now().UnixMicro()) * time.Microsecond
	require.Equal(t, 300*time.Second, d, "the queue's default leaseTime")
	for _, f := range followers {
		st, ok := f.b.cur.Get(key)
		require.True(t, ok)
		require.Equal(t, clocks.of(f).Now().Add(d).UnixMicro(), st.Lease.ExpiresAtMicros,
			"node %s holds the lease until 300 s after it applied the claim, by its own clock", f.id)
	}

	leader.close()
	next := waitLeader(t, followers)
	pop, err := next.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 1})
	require.NoError(t, err)
	require.Empty(t, pop.Messages, "the lease is live on the new leader")
	pop.Release()

	clocks.of(next).Advance(d + time.Second)
	pop, err = next.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 1})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 1, "after the lease ran out by the new leader's clock, the message comes again")
	require.Equal(t, "m1", pop.Messages[0].TransactionID)
	require.NotEqual(t, leaseID, pop.LeaseID)
	pop.Release()
}
