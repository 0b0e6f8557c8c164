package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/replica"
	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// clusterNode is one comb of an in-process cluster: its broker over a
// replicated commit log.
type clusterNode struct {
	id, dir string
	peers   []replica.Peer
	timing  raftTiming
	conf    func(*Config) // nil: the test defaults of open
	net     *inmemNet     // nil: TCP on loopback; else raft's in-memory transport
	log     *replica.Log
	b       *Broker
}

// raftTiming is the raft timeouts of a test cluster.
type raftTiming struct {
	heartbeat, election, lease time.Duration
	trailingLogs               uint64 // 0 = raft's default
	walSegmentBytes            int    // 0 = raft-wal's default
}

// fastRaft keeps the tests short; raftDefaults (zero: raft's own, 1 s, 1 s
// and 500 ms) is what comb serve would run with. fastRaft was 200/200/100 ms:
// under the race detector on two shared cores a leader starved for 100 ms lost
// its lease mid-test now and then ("does not lead its cluster" in a test about
// something else), so it is 500/500/250 ms, half of raft's own.
var (
	fastRaft     = raftTiming{heartbeat: 500 * time.Millisecond, election: 500 * time.Millisecond, lease: 250 * time.Millisecond}
	raftDefaults = raftTiming{}
)

// startCluster starts n nodes on loopback TCP, each with its own data
// directory, and returns them once one is the ready leader.
func startCluster(t testing.TB, n int) []*clusterNode {
	return startClusterWith(t, n, fastRaft)
}

func startClusterWith(t testing.TB, n int, timing raftTiming) []*clusterNode {
	return startClusterConf(t, n, timing, nil)
}

// startClusterConf is startClusterWith with conf applied to every node's
// broker Config.
func startClusterConf(t testing.TB, n int, timing raftTiming, conf func(*Config)) []*clusterNode {
	t.Helper()
	peers := make([]replica.Peer, n)
	for i, addr := range freeAddrs(t, n) {
		peers[i] = replica.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: addr}
	}
	nodes := make([]*clusterNode, n)
	for i, p := range peers {
		node := &clusterNode{id: p.ID, dir: t.TempDir(), peers: peers, timing: timing, conf: conf}
		node.open(t)
		nodes[i] = node
		t.Cleanup(func() { node.close() })
	}
	waitLeader(t, nodes)
	return nodes
}

// open starts the node on its data directory (<dir>/raft holds raft's
// state), as comb serve would: the replicated log, the broker over it,
// then raft with the broker as its follower side.
func (n *clusterNode) open(t testing.TB) {
	t.Helper()
	var self replica.Peer
	for _, p := range n.peers {
		if p.ID == n.id {
			self = p
		}
	}
	// As comb serve does: a snapshot received from another node is
	// installed before the broker opens the directory.
	_, err := replica.PrepareDataDir(n.dir, filepath.Join(n.dir, "raft"), nil)
	require.NoError(t, err)
	rc := replica.Config{
		NodeID: n.id, RaftAddr: self.Addr, Dir: filepath.Join(n.dir, "raft"), Cluster: n.peers,
		HeartbeatTimeout: n.timing.heartbeat, ElectionTimeout: n.timing.election, LeaderLeaseTimeout: n.timing.lease,
		TrailingLogs: n.timing.trailingLogs, WALSegmentBytes: n.timing.walSegmentBytes,
		Logger: testRaftLogger(n.id),
	}
	if n.net != nil {
		rc.Transport = n.net.join(self.Addr)
	}
	l, err := replica.Open(rc)
	require.NoError(t, err)
	cfg := Config{DataDir: n.dir, Sync: "never", Logger: zerolog.Nop(), WakeTick: time.Millisecond,
		MaintenanceInterval: -1, Replicated: l}
	if n.conf != nil {
		n.conf(&cfg)
	}
	b, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.Start(b))
	n.log, n.b = l, b
}

func (n *clusterNode) close() {
	if n.b != nil {
		n.b.Close() // closes the replicated log too
		n.b = nil
	}
}

// freeAddrs returns n distinct free loopback addresses: their listeners stay
// open until all n are taken, since a port closed at once may be handed out
// again by the next Listen (a cluster bootstrap then refused "duplicate
// address in configuration").
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// waitLeader returns the one live node that is the ready leader.
func waitLeader(t testing.TB, nodes []*clusterNode) *clusterNode {
	t.Helper()
	var leader *clusterNode
	require.Eventually(t, func() bool {
		leader = nil
		for _, n := range nodes {
			if n.b != nil && n.log.Role() == "leader" {
				leader = n
			}
		}
		return leader != nil
	}, 10*time.Second, 10*time.Millisecond, "no leader elected")
	return leader
}

func followersOf(nodes []*clusterNode, leader *clusterNode) []*clusterNode {
	var out []*clusterNode
	for _, n := range nodes {
		if n != leader && n.b != nil {
			out = append(out, n)
		}
	}
	return out
}

// waitMessage waits until n's read path returns the message with payload.
func waitMessage(t *testing.T, n *clusterNode, partitionID, txid, payload string) {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := findMsg(n.b, partitionID, txid)
		return err == nil && string(d.Payload) == payload
	}, 5*time.Second, 5*time.Millisecond, "node %s never held message %s", n.id, txid)
}

// TestClusterReplicatesPushesAndAcksAndSurvivesLeaderLoss: issue 15's
// first slice. A push answered by the leader is held by every follower
// (read back through their read path); an ack's checkpoint moves the
// followers' cursors; after the leader is shut down another node leads and
// takes pushes, which the remaining follower holds too; the old leader
// restarted on its directory catches up and follows.
func TestClusterReplicatesPushesAndAcksAndSurvivesLeaderLoss(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)

	res, err := leader.b.Push([]PushItem{
		{Queue: "orders", TransactionID: "t1", Payload: []byte(`{"n":1}`)},
		{Queue: "orders", TransactionID: "t2", Payload: []byte(`{"n":2}`)},
	})
	require.NoError(t, err)
	require.Equal(t, PushQueued, res[0].Status)
	pid := res[0].PartitionID
	for _, f := range followersOf(nodes, leader) {
		waitMessage(t, f, pid, "t1", `{"n":1}`)
		waitMessage(t, f, pid, "t2", `{"n":2}`)
	}

	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: "orders", Group: "billing", Batch: 10})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 2)
	pop.Release()
	acks, err := leader.b.Ack("billing", []AckItem{{TransactionID: "t2", PartitionID: pid, LeaseID: pop.LeaseID}})
	require.NoError(t, err)
	require.True(t, acks[0].Success, acks[0].Error)
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "billing"}
	for _, f := range followersOf(nodes, leader) {
		require.Eventually(t, func() bool {
			st, ok := f.b.cur.Get(key)
			return ok && st.Committed == 2 && !st.Lease.Held()
		}, 5*time.Second, 5*time.Millisecond, "node %s: cursor of billing never reached 2", f.id)
	}

	old := leader
	old.close()
	leader = waitLeader(t, nodes)
	require.NotEqual(t, old.id, leader.id)
	res, err = leader.b.Push([]PushItem{{Queue: "orders", TransactionID: "t3", Payload: []byte(`{"n":3}`)}})
	require.NoError(t, err)
	require.Equal(t, PushQueued, res[0].Status)
	require.Equal(t, pid, res[0].PartitionID, "the new leader pushes to the partition the old one created")
	waitMessage(t, leader, pid, "t3", `{"n":3}`)
	for _, f := range followersOf(nodes, leader) {
		waitMessage(t, f, pid, "t3", `{"n":3}`)
		st, ok := f.b.cur.Get(key)
		require.True(t, ok)
		require.Equal(t, uint64(2), st.Committed, "node %s: the cursor survives the failover", f.id)
	}

	// The old leader rejoins on its directory: raft applies again what it
	// missed (t3) and what it had (the replay skips it), and it follows on.
	old.open(t)
	waitMessage(t, old, pid, "t3", `{"n":3}`)
	_, err = leader.b.Push([]PushItem{{Queue: "orders", TransactionID: "t4", Payload: []byte(`{"n":4}`)}})
	require.NoError(t, err)
	waitMessage(t, old, pid, "t4", `{"n":4}`)
	for _, tx := range []string{"t1", "t2"} {
		d, err := findMsg(old.b, pid, tx)
		require.NoError(t, err)
		require.Equal(t, uint64(map[string]int{"t1": 1, "t2": 2}[tx]), d.offset, "node %s: %s is held once, at its offset", old.id, tx)
	}
	d, err := findMsg(old.b, pid, "t4")
	require.NoError(t, err)
	require.Equal(t, uint64(4), d.offset, "no segment was appended twice")
	require.Eventually(t, func() bool {
		st, ok := old.b.cur.Get(key)
		return ok && st.Committed == 2
	}, 5*time.Second, 5*time.Millisecond)
}

func parseTestUUID(t *testing.T, s string) [16]byte {
	t.Helper()
	id, ok := parseID(s)
	require.True(t, ok, "not a UUID: %s", s)
	return id
}

// TestClusterReplicatesConfigureTransactionsAndDeletes: a queue's
// configuration, a transaction (its push and its ack, through its Tx entry)
// and a queue deletion reach the followers, the deletion with its files.
func TestClusterReplicatesConfigureTransactionsAndDeletes(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	opts := DefaultQueueOptions()
	opts.LeaseTime, opts.RetryLimit = 42, 7
	conf, err := leader.b.Configure(ConfigureRequest{Queue: "jobs", Namespace: "ns", Options: opts})
	require.NoError(t, err)
	res, err := leader.b.Push([]PushItem{{Queue: "jobs", TransactionID: "a", Payload: []byte(`1`)}})
	require.NoError(t, err)
	pid := res[0].PartitionID
	require.Equal(t, conf.PartitionID, pid)
	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: "jobs", Group: "g", Batch: 1})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 1)
	pop.Release()
	tx, err := leader.b.Transaction([]TxOp{
		{Type: "ack", Group: "g", Ack: AckItem{TransactionID: "a", PartitionID: pid, LeaseID: pop.LeaseID}},
		{Type: "push", Push: PushItem{Queue: "jobs", TransactionID: "b", Payload: []byte(`2`)}},
	})
	require.NoError(t, err)
	require.True(t, tx.Success, tx.Error)

	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "g"}
	for _, f := range followersOf(nodes, leader) {
		waitMessage(t, f, pid, "b", `2`)
		require.Eventually(t, func() bool {
			st, ok := f.b.cur.Get(key)
			return ok && st.Committed == 1
		}, 5*time.Second, 5*time.Millisecond, "node %s: the transaction's ack", f.id)
		q := f.b.lookupQueue("jobs")
		require.NotNil(t, q)
		c := q.conf.Load()
		require.Equal(t, "ns", c.namespace)
		require.Equal(t, int64(42), c.opts.LeaseTime)
		require.Equal(t, int64(7), c.opts.RetryLimit)
		// The follower holds the transaction's states without checkpointing them itself
		// (it cannot append: its checkpoints would fail and /health say degraded), and
		// counts its pushes as committed (a restart keeps them).
		require.NoError(t, f.b.cur.Wait())
		_, failing := f.b.CheckpointFailure()
		require.False(t, failing, "node %s", f.id)
		p := f.b.lookupPartitionByID(key.Partition)
		require.Equal(t, p.log.NextOffset(), p.committed.Load(), "node %s", f.id)
	}

	found, err := leader.b.DeleteQueue("jobs")
	require.NoError(t, err)
	require.True(t, found)
	for _, f := range followersOf(nodes, leader) {
		require.Eventually(t, func() bool {
			_, hasCursor := f.b.cur.Get(key)
			return f.b.lookupQueue("jobs") == nil && !hasCursor
		}, 5*time.Second, 5*time.Millisecond, "node %s: the queue and its cursor go", f.id)
		ok, err := existsDir(f.b.fs, filepath.Join(f.dir, "partitions", pid))
		require.NoError(t, err)
		require.False(t, ok, "node %s: the partition's directory is removed", f.id)
	}
}

// TestFollowersCutFilesButMoveNoCursor: retention runs on every node, on its
// files; only the leader moves cursors (they reach the others in its
// checkpoints). A follower that leads later raises the cursors it finds below
// its low-water marks before it serves a pop.
func TestFollowersCutFilesButMoveNoCursor(t *testing.T) {
	nodes := startClusterConf(t, 3, fastRaft, func(c *Config) { c.MaxSegmentFileSize = 1; c.IdleEvict = -1 })
	leader := waitLeader(t, nodes)
	opts := DefaultQueueOptions()
	opts.RetentionEnabled, opts.RetentionSeconds = true, 60
	_, err := leader.b.Configure(ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	var pid string
	for i := range 5 { // a file per push
		res, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: fmt.Sprintf("m%d", i+1), Payload: []byte(`1`)}})
		require.NoError(t, err)
		pid = res[0].PartitionID
	}
	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 2, AutoAck: true})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 2)
	pop.Release()
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "g"}
	later := time.Now().Add(2 * time.Minute)
	for _, f := range followersOf(nodes, leader) {
		waitMessage(t, f, pid, "m5", `1`)
		require.Eventually(t, func() bool {
			st, ok := f.b.cur.Get(key)
			return ok && st.Committed == 2
		}, 5*time.Second, 5*time.Millisecond)
		f.b.maintain(later)
		p := f.b.lookupPartitionByID(key.Partition)
		require.Equal(t, uint64(5), p.log.FirstOffset(), "node %s cut the four old files (never the active one)", f.id)
		st, _ := f.b.cur.Get(key)
		require.Equal(t, uint64(2), st.Committed, "node %s moved no cursor", f.id)
	}

	leader.close()
	next := waitLeader(t, nodes)
	// (The follower's maintenance ran two minutes ahead: every message is
	// past retentionSeconds in its memory, so the pop finds none.)
	pop, err = next.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	pop.Release()
	st, _ := next.b.cur.Get(key)
	require.Equal(t, uint64(4), st.Committed, "the new leader raised g's cursor to its low-water mark before its first pop")
}

// TestClusterReplicationStatus: what /health reports of each node (issue
// 15: the acceptance check reads role = leader | follower); a single node
// reports nothing.
func TestClusterReplicationStatus(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	_, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: "x", Payload: []byte(`1`)}})
	require.NoError(t, err)
	want := leader.b.cfg.Replicated.DurableLSN()
	for _, n := range nodes {
		role := "follower"
		if n == leader {
			role = "leader"
		}
		require.Eventually(t, func() bool {
			rs, ok := n.b.Replication()
			return ok && rs.Role == role && rs.LeaderID == leader.id && rs.AppliedLSN == want
		}, 5*time.Second, 5*time.Millisecond, "node %s", n.id)
	}
	rs, _ := leader.b.Replication()
	require.Equal(t, uint64(1), rs.LeaderTerms)
	require.NotZero(t, rs.CommitLatency.Count, "the push's entries were timed")
	single := newEnv(t)
	_, ok := single.b.Replication()
	require.False(t, ok)
}

// TestFollowersRefuseWritesAndChangeNothing: every request that would append
// answers ErrNotLeader on a follower before it touches a file (a push used
// to write its segment, fail its append and take the partition out of
// service), and the follower goes on applying the leader's entries.
func TestFollowersRefuseWritesAndChangeNothing(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	res, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`1`)}})
	require.NoError(t, err)
	pid := res[0].PartitionID
	f := followersOf(nodes, leader)[0]
	waitMessage(t, f, pid, "a", `1`)

	_, err = f.b.Push([]PushItem{{Queue: "q", TransactionID: "x", Payload: []byte(`9`)}})
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.Push([]PushItem{{Queue: "new", TransactionID: "y", Payload: []byte(`9`)}})
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g"})
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.Ack("g", []AckItem{{TransactionID: "a", PartitionID: pid}})
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.Configure(ConfigureRequest{Queue: "q", Options: DefaultQueueOptions()})
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.DeleteQueue("q")
	require.ErrorIs(t, err, ErrNotLeader)
	_, err = f.b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", TransactionID: "z", Payload: []byte(`9`)}}})
	require.ErrorIs(t, err, ErrNotLeader)
	require.Equal(t, ErrNotLeader.Error(), f.b.ExtendLease(uuidString(newV7()), 10).Error)
	require.Empty(t, f.b.Damaged())
	require.Nil(t, f.b.lookupQueue("new"))

	_, err = leader.b.Push([]PushItem{{Queue: "q", TransactionID: "b", Payload: []byte(`2`)}})
	require.NoError(t, err)
	waitMessage(t, f, pid, "b", `2`)
	d, err := findMsg(f.b, pid, "b")
	require.NoError(t, err)
	require.Equal(t, uint64(2), d.offset, "the refused push took no offset")
}

// TestNewLeaderServesPopsAfterItsFence: seed 004, a new leader waits before
// it serves pops; the wait is seed 004's half second (longer only when
// raft's leader lease plus one checkpoint interval is), counted from its
// election, and a pop that comes sooner waits out the rest instead of
// failing. After a failover the same holds.
func TestNewLeaderServesPopsAfterItsFence(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	fence := leader.b.fence()
	require.Equal(t, 500*time.Millisecond, fence, "the test cluster's lease is 100 ms: the seed's half second rules")
	for round := range 2 {
		since := leader.log.LeaderSince()
		require.False(t, since.IsZero())
		_, err := leader.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g"})
		require.NoError(t, err)
		require.False(t, time.Now().Before(since.Add(fence)), "round %d: a pop answered inside the fence", round)
		if round == 0 {
			leader.close()
			leader = waitLeader(t, nodes)
		}
	}
}

// TestFollowerPublishesAppliedPushes: an applied push is counted in the
// follower's pending depth as the leader counts it (a node that leads later
// starts from the right numbers).
func TestFollowerPublishesAppliedPushes(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	res, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`1`)}, {Queue: "q", TransactionID: "b", Payload: []byte(`2`)}})
	require.NoError(t, err)
	for _, f := range followersOf(nodes, leader) {
		waitMessage(t, f, res[0].PartitionID, "b", `2`)
		require.Equal(t, int64(2), f.b.lookupQueue("q").pendingQM.Load(), "node %s", f.id)
	}
	require.Equal(t, int64(2), leader.b.lookupQueue("q").pendingQM.Load())
}

// TestLeaderClosesCleanlyAfterItsFollowers: a whole cluster stopped at once
// (the followers first) leaves the leader unable to commit its last flush
// pass; that is the cluster's state, not damage, so Close succeeds (the
// next start applies the log again) and the cursor engine never went
// sticky on it.
func TestLeaderClosesCleanlyAfterItsFollowers(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := waitLeader(t, nodes)
	_, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`1`)}})
	require.NoError(t, err)
	_, err = leader.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g"})
	require.NoError(t, err)
	for _, f := range followersOf(nodes, leader) {
		f.close()
	}
	require.NoError(t, leader.b.Close())
	leader.b = nil
}

// TestSnapshotsCompactRaftsLogSafely: a raft snapshot runs the flush pass
// first, so raft may drop the entries behind it; a follower restarted after
// its snapshot (its own marker restored, raft's log cut) holds everything
// and catches up on what it missed while it was down.
func TestSnapshotsCompactRaftsLogSafely(t *testing.T) {
	timing := fastRaft
	timing.trailingLogs = 5
	nodes := startClusterWith(t, 3, timing)
	leader := waitLeader(t, nodes)
	var pid string
	for i := range 30 {
		res, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: fmt.Sprintf("m%d", i), Payload: []byte(fmt.Sprintf("%d", i))}})
		require.NoError(t, err)
		pid = res[0].PartitionID
	}
	f := followersOf(nodes, leader)[0]
	waitMessage(t, f, pid, "m29", "29")
	require.NoError(t, f.log.Snapshot())
	require.NoError(t, leader.log.Snapshot())
	f.close()
	for i := 30; i < 33; i++ {
		_, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: fmt.Sprintf("m%d", i), Payload: []byte(fmt.Sprintf("%d", i))}})
		require.NoError(t, err)
	}
	f.open(t)
	for _, i := range []int{0, 17, 29, 32} {
		waitMessage(t, f, pid, fmt.Sprintf("m%d", i), fmt.Sprintf("%d", i))
	}
	require.NoError(t, f.log.Err())
}

// TestAFollowerFarBehindInstallsTheLeadersState: a follower that missed
// entries the leader's log dropped behind a snapshot is sent the leader's
// data directory; it goes stale (the broker freezes, as comb serve then
// restarts it), and reopened on its directory it installs that state
// (replica.PrepareDataDir) and follows on: every message at its offset, the
// group's cursor as the leader has it, and the pushes after.
func TestAFollowerFarBehindInstallsTheLeadersState(t *testing.T) {
	timing := fastRaft
	timing.trailingLogs, timing.walSegmentBytes = 2, 8<<10
	nodes := startClusterWith(t, 3, timing)
	leader := waitLeader(t, nodes)
	f := followersOf(nodes, leader)[0]
	f.close()
	var pid string
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		// Incompressible, to fill raft-wal's 8 KiB segments.
		var sb strings.Builder
		for sb.Len() < 1000 {
			fmt.Fprintf(&sb, "%016x", rnd.Uint64())
		}
		big := strconv.Quote(sb.String())
		res, err := leader.b.Push([]PushItem{{Queue: "q", TransactionID: fmt.Sprintf("m%d", i), Payload: []byte(big)}})
		require.NoError(t, err)
		pid = res[0].PartitionID
	}
	pop, err := leader.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", Batch: 15, AutoAck: true})
	require.NoError(t, err)
	require.Len(t, pop.Messages, 15)
	pop.Release()
	require.NoError(t, leader.b.Flush())
	require.NoError(t, leader.log.Snapshot())

	f.open(t)
	select {
	case <-f.b.Stale():
	case <-time.After(10 * time.Second):
		_, merr := findMsg(f.b, pid, "m39")
		t.Fatalf("the follower was not sent the leader's snapshot (holds m39: %v; err %v)", merr == nil, f.log.Err())
	}
	require.ErrorIs(t, f.b.flushPass(), ErrStale, "a stale node writes no state file")
	f.close()
	f.open(t) // installs, then follows
	_, err = leader.b.Push([]PushItem{{Queue: "q", TransactionID: "after", Payload: []byte(`2`)}})
	require.NoError(t, err)
	waitMessage(t, f, pid, "after", `2`)
	for i := range 40 {
		d, err := findMsg(f.b, pid, fmt.Sprintf("m%d", i))
		require.NoError(t, err, "m%d", i)
		require.Equal(t, uint64(i+1), d.offset)
	}
	key := cursor.Key{Partition: parseTestUUID(t, pid), Group: "g"}
	st, ok := f.b.cur.Get(key)
	require.True(t, ok)
	require.Equal(t, uint64(15), st.Committed, "the group's cursor came with the state")
	require.NoError(t, f.log.Err())
}

// testRaftLogger is silent unless COMB_TEST_RAFT_LOG is set (debugging raft).
func testRaftLogger(id string) hclog.Logger {
	if os.Getenv("COMB_TEST_RAFT_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info})
}
