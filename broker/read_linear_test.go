package broker

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/stretchr/testify/require"
)

// consumedOf is group g's cursor on partition pid on n, as GroupDetail's
// totalConsumed reports it (-1: no cursor).
func consumedOf(n *clusterNode, g, pid string) int64 {
	out := int64(-1)
	n.b.View().RangeCursors(func(k cursor.Key, st lease.State) bool {
		if k.Group == g && uuidString(k.Partition) == pid {
			out = int64(st.Committed)
			return false
		}
		return true
	})
	return out
}

// groupCursors counts group g's cursors on n: a read of the leader's memory
// alone, as GroupDetail walks them.
func groupCursors(n *clusterNode, g string) int {
	count := 0
	n.b.View().RangeCursors(func(k cursor.Key, _ lease.State) bool {
		if k.Group == g {
			count++
		}
		return true
	})
	return count
}

// pushPop pushes count messages to q on the leader and pops them for g,
// returning the partition and the pop's lease; every follower holds the
// claim's checkpoint when it returns.
func pushPop(t *testing.T, nodes []*clusterNode, leader *clusterNode, q, g string, count int) (string, string) {
	t.Helper()
	var items []PushItem
	for i := range count {
		items = append(items, PushItem{Queue: q, TransactionID: fmt.Sprintf("m%d", i+1), Payload: []byte(`1`)})
	}
	res, err := leader.b.Push(items)
	require.NoError(t, err)
	pid := res[0].PartitionID
	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: q, Group: g, Batch: count})
	require.NoError(t, err)
	require.Len(t, pop.Messages, count)
	pop.Release()
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: g}
	for _, f := range followersOf(nodes, leader) {
		require.Eventually(t, func() bool {
			st, ok := f.b.cur.Get(key)
			return ok && st.Lease.Held()
		}, 5*time.Second, time.Millisecond, "node %s never applied the claim", f.id)
	}
	return pid, pop.LeaseID
}

// TestReadDuringAnUncommittedAckDoesNotShowIt: issue 22's reproduction. The
// leader is cut off from both followers; an ack through it moves the cursor
// in its memory (GroupDetail shows 5) but cannot commit; the read's barrier
// refuses that answer (ErrNotLeader: a 503 over HTTP), the ack fails, and the
// next leader shows the committed cursor, 0: no client saw a cursor that went
// back.
func TestReadDuringAnUncommittedAckDoesNotShowIt(t *testing.T) {
	nodes, net := startInmemCluster(t, 3, fastRaft)
	leader := waitLeader(t, nodes)
	pid, leaseID := pushPop(t, nodes, leader, "q", "g", 5)
	require.Equal(t, int64(0), consumedOf(leader, "g", pid))
	require.NoError(t, leader.b.ReadBarrier(), "a leader with its quorum confirms reads")

	net.isolate(nodes, leader, true)
	acked := make(chan error, 1)
	go func() {
		var items []AckItem
		for i := range 5 {
			items = append(items, AckItem{TransactionID: fmt.Sprintf("m%d", i+1), PartitionID: pid, LeaseID: leaseID, Status: "completed"})
		}
		_, err := leader.b.Ack("g", items)
		acked <- err
	}()
	require.Eventually(t, func() bool { return consumedOf(leader, "g", pid) == 5 }, 5*time.Second, time.Millisecond,
		"the ack moves the cursor in the isolated leader's memory before it commits")
	require.ErrorIs(t, leader.b.ReadBarrier(), ErrNotLeader, "the read that saw 5 is refused")
	require.Error(t, <-acked, "the ack never committed")

	// The others elect a leader of their own before the cut heals (healed sooner, the old
	// leader's longer log could win it back, and commit the ack after all).
	next := waitLeader(t, followersOf(nodes, leader))
	net.isolate(nodes, leader, false)
	require.Eventually(t, func() bool { return next.b.ReadBarrier() == nil }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, int64(0), consumedOf(next, "g", pid), "the committed cursor")
}

// TestReadsAfterACommittedAckShowIt: a read after an answered ack shows it and
// is confirmed; a follower (which forwards reads over HTTP) and a single node
// answer as they did: ErrNotLeader, and nil at once.
func TestReadsAfterACommittedAckShowIt(t *testing.T) {
	nodes, _ := startInmemCluster(t, 3, fastRaft)
	leader := waitLeader(t, nodes)
	pid, leaseID := pushPop(t, nodes, leader, "q", "g", 2)
	res, err := leader.b.Ack("g", []AckItem{{TransactionID: "m1", PartitionID: pid, LeaseID: leaseID, Status: "completed"},
		{TransactionID: "m2", PartitionID: pid, LeaseID: leaseID, Status: "completed"}})
	require.NoError(t, err)
	require.True(t, res[0].Success && res[1].Success)
	require.Equal(t, int64(2), consumedOf(leader, "g", pid))
	require.NoError(t, leader.b.ReadBarrier())
	for _, f := range followersOf(nodes, leader) {
		require.ErrorIs(t, f.b.ReadBarrier(), ErrNotLeader, "node %s", f.id)
	}
	single := newEnv(t)
	require.NoError(t, single.b.ReadBarrier())
}

// TestReadBarrierWaitsForTheCheckpointOfWhatItSaw: an ack's cursor change is
// in memory before its checkpoint is even appended (the engine collects
// every CheckpointInterval); the barrier asks for that checkpoint at once and
// returns once it is committed (applied on the leader after a quorum holds
// it), and every follower applies it then.
func TestReadBarrierWaitsForTheCheckpointOfWhatItSaw(t *testing.T) {
	nodes, _ := startInmemCluster(t, 3, fastRaft)
	leader := waitLeader(t, nodes)
	pid, _ := pushPop(t, nodes, leader, "q", "g", 3)
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "g"}
	st, ok := leader.b.cur.Get(key)
	require.True(t, ok)
	before := leader.log.DurableLSN()
	// A change made in memory as a handler makes it, not yet checkpointed.
	st.Committed, st.Lease.ID = 3, [16]byte{}
	leader.b.cur.Set(key, st)
	require.NoError(t, leader.b.ReadBarrier())
	require.Greater(t, leader.log.DurableLSN(), before, "the change's checkpoint committed before the barrier returned")
	for _, f := range followersOf(nodes, leader) {
		require.Eventually(t, func() bool {
			fs, ok := f.b.cur.Get(key)
			return ok && fs.Committed == 3
		}, 5*time.Second, time.Millisecond, "node %s", f.id)
	}
}

// BenchmarkClusterRead measures what a linearizable read costs on a 3-node
// cluster (raft over loopback TCP, as comb serve runs): GroupDetail of a
// group with a cursor on 8 partitions read from the leader's memory alone
// (what a single node answers), and the same read followed by ReadBarrier
// (what every read route of a cluster node answers with), sequentially
// (p50-µs, p99-µs) and with 8 readers in parallel. An idle cluster: the
// barrier's cost is the heartbeat round to a quorum (VerifyLeader); under
// acks it also waits for their checkpoint.
func BenchmarkClusterRead(b *testing.B) {
	nodes := startClusterWith(b, 3, raftDefaults) // comb serve's timeouts: no elections under load
	leader := waitLeader(b, nodes)
	var items []PushItem
	for i := range 8 {
		items = append(items, PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", i), TransactionID: fmt.Sprintf("m%d", i), Payload: []byte(`1`)})
	}
	_, err := leader.b.Push(items)
	require.NoError(b, err)
	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 8, Partitions: 8, AutoAck: true})
	require.NoError(b, err)
	pop.Release()
	for _, barrier := range []bool{false, true} {
		name := "memory-only"
		if barrier {
			name = "with-read-barrier"
		}
		read := func() error {
			if groupCursors(leader, "g") == 0 {
				return fmt.Errorf("no cursor")
			}
			if barrier {
				return leader.b.ReadBarrier()
			}
			return nil
		}
		b.Run(name+"/sequential", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				if err := read(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := read(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
