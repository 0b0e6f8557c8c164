package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/lsn"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// recorder is an Applier that keeps what it was handed.
type recorder struct {
	mu      sync.Mutex
	got     []entry
	own     []uint64 // LSNs handed to CommittedOwn
	dir     string   // what SnapshotFiles lists (a data directory; "" = nothing)
	flushes int
}

// SnapshotFiles lists the regular files under r.dir (none when it is "").
func (r *recorder) SnapshotFiles(visit func(rel, path string, size int64)) (func(), error) {
	if r.dir == "" {
		return func() {}, nil
	}
	err := filepath.WalkDir(r.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(r.dir, path)
		if err != nil || strings.HasPrefix(rel, "raft"+string(filepath.Separator)) {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		visit(filepath.ToSlash(rel), path, st.Size())
		return nil
	})
	return func() {}, err
}

func (r *recorder) CommittedOwn(lsn uint64, kind byte, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.own = append(r.own, lsn)
}

func (r *recorder) ownLSNs() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.own...)
}

func (r *recorder) ApplyReplicated(lsn uint64, kind byte, payload []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, entry{lsn: lsn, kind: kind, payload: append([]byte(nil), payload...)})
	return nil
}

func (r *recorder) Flush() error {
	r.mu.Lock()
	r.flushes++
	r.mu.Unlock()
	return nil
}

func (r *recorder) entries() []entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]entry(nil), r.got...)
}

type testNode struct {
	log *Log
	rec *recorder
}

func startNodes(t testing.TB, n int) []*testNode {
	t.Helper()
	return startNodesWith(t, n, nil)
}

// startNodesWith starts n members of a new cluster on loopback, calling edit (when not nil)
// on each one's Config before it opens.
func startNodesWith(t testing.TB, n int, edit func(i int, c *Config)) []*testNode {
	t.Helper()
	peers := make([]Peer, n)
	for i := range peers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		peers[i] = Peer{ID: fmt.Sprintf("n%d", i+1), Addr: ln.Addr().String()}
		require.NoError(t, ln.Close())
	}
	nodes := make([]*testNode, n)
	for i, p := range peers {
		cfg := Config{NodeID: p.ID, RaftAddr: p.Addr, HTTPAddr: httpAddrOf(p.ID), Dir: t.TempDir(), Cluster: peers,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, Logger: hclog.NewNullLogger()}
		if edit != nil {
			edit(i, &cfg)
		}
		l, err := Open(cfg)
		require.NoError(t, err)
		nodes[i] = &testNode{log: l, rec: &recorder{}}
		require.NoError(t, l.Start(nodes[i].rec))
		t.Cleanup(func() { l.Close() })
	}
	return nodes
}

func leaderOf(t *testing.T, nodes []*testNode, except *testNode) *testNode {
	t.Helper()
	var leader *testNode
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if n != except && n.log.Leading() {
				leader = n
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	return leader
}

// TestLogOrdersAppliesAndSkipsTheProposer: entries get consecutive LSNs in
// Append order, followers are handed each one once in that order, the
// proposer none (its handler applied them); a follower refuses appends; a
// new leader numbers on after the last committed LSN.
func TestLogOrdersAppliesAndSkipsTheProposer(t *testing.T) {
	nodes := startNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	var waits []lsn.Ticket
	for i := range 20 {
		tk, err := leader.log.Append(byte(i%3), []byte{byte(i)})
		require.NoError(t, err)
		require.Equal(t, lsn.LSN(i+1), tk.LSN)
		waits = append(waits, tk)
	}
	for _, w := range waits {
		require.NoError(t, w.Wait())
	}
	require.Equal(t, uint64(20), leader.log.DurableLSN())
	require.Empty(t, leader.rec.entries(), "the proposer applies nothing twice")
	wantOwn := make([]uint64, 20)
	for i := range wantOwn {
		wantOwn[i] = uint64(i + 1)
	}
	require.Equal(t, wantOwn, leader.rec.ownLSNs(), "the proposer hears each of its entries committed, in order")
	for _, n := range nodes {
		if n == leader {
			continue
		}
		require.Eventually(t, func() bool { return n.log.DurableLSN() == 20 }, 5*time.Second, 5*time.Millisecond)
		got := n.rec.entries()
		require.Len(t, got, 20)
		for i, e := range got {
			require.Equal(t, entry{lsn: uint64(i + 1), kind: byte(i % 3), payload: []byte{byte(i)}}, e)
		}
		_, err := n.log.Append(1, nil)
		require.True(t, errors.Is(err, ErrNotLeader), "a follower refuses: %v", err)
		require.Equal(t, "follower", n.log.Role())
	}

	require.NoError(t, leader.log.Close())
	next := leaderOf(t, nodes, leader)
	tk, err := next.log.Append(9, []byte("after"))
	require.NoError(t, err)
	require.Equal(t, lsn.LSN(21), tk.LSN, "LSNs continue across leaders")
	require.NoError(t, tk.Wait())
}

// TestLeaderThatStepsDownIsDeposed: a leader that hands its leadership over
// (HandOver, what comb serve does on SIGTERM)
// closes Deposed before it stops reporting Leading; the node that takes over
// and the one that never led are not deposed; Close deposes nobody.
func TestLeaderThatStepsDownIsDeposed(t *testing.T) {
	nodes := startNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	tk, err := leader.log.Append(1, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, tk.Wait())
	require.NoError(t, leader.log.HandOver())
	require.NoError(t, leader.log.HandOver(), "a node that no longer leads has nothing to hand over")
	select {
	case <-leader.log.Stale():
	case <-time.After(10 * time.Second):
		t.Fatal("the old leader was not deposed")
	}
	require.False(t, leader.log.Leading())
	next := leaderOf(t, nodes, leader)
	for _, n := range nodes {
		if n == leader {
			continue
		}
		select {
		case <-n.log.Stale():
			t.Fatalf("%s deposed without losing a leadership", n.log.cfg.NodeID)
		default:
		}
	}
	require.NoError(t, next.log.Close())
	select {
	case <-next.log.Stale():
		t.Fatal("Close deposed the leader")
	default:
	}
}

// A node started to join (no bootstrap) gets the log once the leader adds
// it; membership lists it, with the leader marked; a removal takes a node
// out; a follower refuses to change membership.
func TestMembersJoinAndLeave(t *testing.T) {
	nodes := startNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	tk, err := leader.log.Append(1, []byte("before"))
	require.NoError(t, err)
	require.NoError(t, tk.Wait())

	peers := make([]Peer, 0, 4)
	for _, n := range nodes {
		peers = append(peers, Peer{ID: n.log.cfg.NodeID, Addr: n.log.cfg.RaftAddr})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	n4 := Peer{ID: "n4", Addr: ln.Addr().String()}
	require.NoError(t, ln.Close())
	peers = append(peers, n4)
	l4, err := Open(Config{NodeID: "n4", RaftAddr: n4.Addr, Dir: t.TempDir(), Cluster: peers, Join: true,
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, Logger: hclog.NewNullLogger()})
	require.NoError(t, err)
	rec4 := &recorder{}
	require.NoError(t, l4.Start(rec4))
	t.Cleanup(func() { l4.Close() })

	var follower *testNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	require.ErrorIs(t, follower.log.AddVoter("n4", n4.Addr), ErrNotLeader)
	require.NoError(t, leader.log.AddVoter("n4", n4.Addr))
	require.Eventually(t, func() bool {
		got := rec4.entries()
		return len(got) == 1 && string(got[0].payload) == "before"
	}, 10*time.Second, 5*time.Millisecond, "the new member catches up")
	require.Eventually(t, func() bool { return l4.ClusterID() != "" && l4.ClusterID() == leader.log.ClusterID() }, 10*time.Second, 5*time.Millisecond,
		"a joiner takes the cluster's id (its --initial-cluster differs: it joins)")
	ms, err := leader.log.Members()
	require.NoError(t, err)
	require.Len(t, ms, 4)
	require.Equal(t, "n4", ms[3].ID)
	require.True(t, ms[3].Voter)
	for _, m := range ms {
		require.Equal(t, m.ID == leader.log.cfg.NodeID, m.Leader, m.ID)
	}

	require.ErrorIs(t, leader.log.AddVoter("n9", n4.Addr), ErrAddrInUse, "raft refuses two members at one address")
	require.ErrorIs(t, leader.log.AddVoter("n9", freeAddr(t)), ErrUnreachable, "a voter nothing answers for would cost a quorum")
	ms, err = leader.log.Members()
	require.NoError(t, err)
	require.Len(t, ms, 4, "the refused member was not added")
	require.ErrorIs(t, leader.log.RemoveServer("n9"), ErrUnknownMember)
	require.NoError(t, leader.log.RemoveServer(follower.log.cfg.NodeID))
	ms, err = leader.log.Members()
	require.NoError(t, err)
	require.Len(t, ms, 3)
	for _, m := range ms {
		require.NotEqual(t, follower.log.cfg.NodeID, m.ID)
	}
}

// The only voter cannot be removed (raft keeps one): ErrLastMember, which the HTTP route
// answers 409, instead of raft's error as a 500.
func TestRemovingTheOnlyVoterIsRefused(t *testing.T) {
	nodes := startNodes(t, 1)
	leader := leaderOf(t, nodes, nil)
	require.ErrorIs(t, leader.log.RemoveServer(leader.log.cfg.NodeID), ErrLastMember)
	ms, err := leader.log.Members()
	require.NoError(t, err)
	require.Len(t, ms, 1)
}

// freeAddr is a loopback address nothing listens at.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// The transport replicates without raft's pipeline (MaxRPCsInFlight 1): its
// pipeline could deadlock a deposed leader's shutdown (replica/log.go, Open).
func TestTransportDoesNotPipeline(t *testing.T) {
	nodes := startNodes(t, 1)
	_, err := nodes[0].log.trans.AppendEntriesPipeline("n2", "127.0.0.1:1")
	require.ErrorIs(t, err, raft.ErrPipelineReplicationNotSupported)
}
