package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/certs"
)

// peerTLSFor makes a CA and a certificate for each id under dir (as `comb certs` does) and
// returns each id's Config.PeerTLS.
func peerTLSFor(t testing.TB, dir string, ids ...string) map[string]*tls.Config {
	t.Helper()
	var nodes []certs.Node
	for _, id := range ids {
		nodes = append(nodes, certs.Node{ID: id, Hosts: []string{"127.0.0.1", "localhost"}})
	}
	_, _, err := certs.Make(dir, nodes, certs.Options{})
	require.NoError(t, err)
	out := map[string]*tls.Config{}
	for _, id := range ids {
		c, err := LoadPeerTLS(certs.CertFile(dir, id), certs.KeyFile(dir, id), certs.CAFile(dir))
		require.NoError(t, err)
		out[id] = c
	}
	return out
}

// startTLSNodes starts a new n-member cluster with peer TLS from one CA.
func startTLSNodes(t testing.TB, n int) []*testNode {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "n" + string(rune('1'+i))
	}
	confs := peerTLSFor(t, t.TempDir(), ids...)
	return startNodesWith(t, n, func(i int, c *Config) { c.PeerTLS = confs[c.NodeID] })
}

// awaitClusterID waits until every node keeps the same cluster id and returns it.
func awaitClusterID(t *testing.T, nodes []*testNode) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		id = nodes[0].log.ClusterID()
		for _, n := range nodes {
			if n.log.ClusterID() == "" || n.log.ClusterID() != id {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "every member keeps the cluster id")
	return id
}

// raftState is what a stranger must not change: each node's term, the leader it knows and
// its last log index.
type raftState struct {
	Term, LastIndex uint64
	Leader          raft.ServerID
}

func stateOf(nodes []*testNode) map[string]raftState {
	out := map[string]raftState{}
	for _, n := range nodes {
		_, leader := n.log.r.LeaderWithID()
		out[n.log.cfg.NodeID] = raftState{Term: n.log.r.CurrentTerm(), LastIndex: n.log.r.LastIndex(), Leader: leader}
	}
	return out
}

// tlsStream is a stranger's StreamLayer for raft's own NetworkTransport: TLS with whatever
// client certificate conf holds (none, or one of another CA), trusting any server.
type tlsStream struct {
	net.Listener
	conf *tls.Config
}

func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.conf)
}

// issue 22 item 1: with hashicorp/raft's own NetworkTransport, a stranger sends what took the
// cluster over on main d4c9801 (a RequestVote with a higher term and LeadershipTransfer to the
// leader, an AppendEntries claiming leadership with a leader announcement to a follower, at a
// higher and at the current term, a TimeoutNow): over plain TCP, over TLS without a client
// certificate, over TLS with a certificate of another CA. Every RPC fails, each connection is
// refused by the raft port, and every node's term, leader and last log index stay as they
// were.
func TestStrangersRaftRPCsChangeNothing(t *testing.T) {
	nodes := startTLSNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	awaitClusterID(t, nodes)
	tk, err := leader.log.Append(1, []byte("before"))
	require.NoError(t, err)
	require.NoError(t, tk.Wait())
	var followers []*testNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
			require.Eventually(t, func() bool { return len(n.rec.entries()) == 1 }, 10*time.Second, 5*time.Millisecond)
		}
	}
	before := stateOf(nodes)
	httpBefore := map[string]string{}
	for _, n := range nodes {
		_, httpBefore[n.log.cfg.NodeID] = n.log.LeaderHTTP()
	}

	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 3*time.Second, io.Discard)
	require.NoError(t, err)
	defer plain.Close()
	strangerCA := peerTLSFor(t, t.TempDir(), "stranger")["stranger"].Certificates
	strangers := map[string]*raft.NetworkTransport{"plain TCP": plain}
	for name, conf := range map[string]*tls.Config{
		"TLS without a client certificate":         {InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		"TLS with a certificate of another CA":     {InsecureSkipVerify: true, Certificates: strangerCA},
		"TLS 1.2 with a certificate of another CA": {InsecureSkipVerify: true, Certificates: strangerCA, MaxVersion: tls.VersionTLS12},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: &tlsStream{Listener: ln, conf: conf},
			MaxPool: 2, Timeout: 3 * time.Second, Logger: hclog.NewNullLogger()})
		defer tr.Close()
		strangers[name] = tr
	}
	refusedBefore := map[*testNode]uint64{}
	for _, n := range nodes {
		refusedBefore[n] = n.log.peers.refusals.count()
	}
	term := before[leader.log.cfg.NodeID].Term
	last := before[followers[0].log.cfg.NodeID].LastIndex
	posing := raft.RPCHeader{ProtocolVersion: 3, ID: []byte(followers[0].log.cfg.NodeID), Addr: []byte(followers[0].log.cfg.RaftAddr)}
	asLeader := raft.RPCHeader{ProtocolVersion: 3, ID: []byte(leader.log.cfg.NodeID), Addr: []byte(leader.log.cfg.RaftAddr)}
	announce := encodeAnnounce(announcement{node: leader.log.cfg.NodeID, httpAddr: "127.0.0.1:1"})
	for name, tr := range strangers {
		var vote raft.RequestVoteResponse
		require.Error(t, tr.RequestVote("x", raft.ServerAddress(leader.log.cfg.RaftAddr),
			&raft.RequestVoteRequest{RPCHeader: posing, Term: term + 10, LeadershipTransfer: true}, &vote), name)
		require.False(t, vote.Granted, name)
		for _, target := range followers {
			for _, tm := range []uint64{term, term + 10} {
				var app raft.AppendEntriesResponse
				require.Error(t, tr.AppendEntries("x", raft.ServerAddress(target.log.cfg.RaftAddr), &raft.AppendEntriesRequest{
					RPCHeader: asLeader, Term: tm, PrevLogEntry: last, PrevLogTerm: term,
					Entries:           []*raft.Log{{Index: last + 1, Term: tm, Type: raft.LogCommand, Data: announce}},
					LeaderCommitIndex: last + 1}, &app), name)
				require.False(t, app.Success, name)
			}
			var tn raft.TimeoutNowResponse
			require.Error(t, tr.TimeoutNow("x", raft.ServerAddress(target.log.cfg.RaftAddr), &raft.TimeoutNowRequest{RPCHeader: asLeader}, &tn), name)
		}
	}
	// Had a node taken an RPC, it would have answered it: the state is final once the last
	// RPC failed. The refusal is counted right after the node closed the connection, which
	// may be after the stranger saw it fail.
	require.Equal(t, before, stateOf(nodes), "term, leader and last log index of every node")
	for _, n := range nodes {
		_, addr := n.log.LeaderHTTP()
		require.Equal(t, httpBefore[n.log.cfg.NodeID], addr, "%s: no forged announcement applied", n.log.cfg.NodeID)
	}
	require.Eventually(t, func() bool {
		return leader.log.peers.refusals.count() == refusedBefore[leader]+uint64(len(strangers))
	}, 5*time.Second, time.Millisecond, "one refused connection per stranger at the leader")
	for _, f := range followers {
		// Raft's transport dials once per RPC that found no pooled connection: each refused.
		require.Eventually(t, func() bool { return f.log.peers.refusals.count() >= refusedBefore[f]+uint64(3*len(strangers)) },
			5*time.Second, time.Millisecond, f.log.cfg.NodeID)
	}
	tk, err = leader.log.Append(1, []byte("after"))
	require.NoError(t, err)
	require.NoError(t, tk.Wait(), "the cluster commits after the strangers")
}

// A TLS cluster forms, and a member's own connections carry requests to the leader's
// forwarded-HTTP listener (what a follower's forwarding uses), through the handshake.
func TestDialPeerReachesTheLeadersHTTPListener(t *testing.T) {
	nodes := startTLSNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	var follower *testNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	require.Eventually(t, func() bool { id, _ := follower.log.Leader(); return id == leader.log.cfg.NodeID }, 10*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := leader.log.PeerHTTP().Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := follower.log.DialPeer(ctx, leader.log.cfg.NodeID)
	require.NoError(t, err)
	defer c.Close()
	_, ok := c.(*tls.Conn)
	require.True(t, ok, "forwarded requests travel over TLS")
	_, err = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	require.NoError(t, err)
	var got net.Conn
	select {
	case got = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's HTTP listener got no connection")
	}
	defer got.Close()
	buf := make([]byte, 18)
	_, err = io.ReadFull(got, buf)
	require.NoError(t, err)
	require.Equal(t, "GET / HTTP/1.1\r\n\r\n", string(buf))
	_, ok = got.(*tls.Conn)
	require.True(t, ok, "the leader's side is the TLS connection itself (the disconnect watch finds its socket)")

	_, err = follower.log.DialPeer(ctx, "n9")
	require.ErrorIs(t, err, ErrUnknownMember)
}

// issue 22 item 4a: the first leader of a new cluster makes its id, every member keeps it in
// <Dir>/cluster-id, and a restart reads it back.
func TestEveryMemberKeepsTheClusterID(t *testing.T) {
	nodes := startNodes(t, 3)
	leaderOf(t, nodes, nil)
	id := awaitClusterID(t, nodes)
	require.Len(t, id, 32)
	for _, n := range nodes {
		data, err := os.ReadFile(filepath.Join(n.log.cfg.Dir, clusterIDFile))
		require.NoError(t, err)
		c, err := parseClusterIDFile(data)
		require.NoError(t, err)
		require.Equal(t, clusterIDCommand{id: id, hash: hashCluster(n.log.cfg.Cluster)}, c)
	}
	cfg := nodes[2].log.cfg
	require.NoError(t, nodes[2].log.Close())
	l, err := Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, id, l.ClusterID(), "read back at Open")
}

// A member whose directory was emptied and that starts again with the same --initial-cluster
// is admitted, takes the cluster's id and follows (a wiped disk is not another cluster).
func TestAnEmptiedMemberTakesTheClusterID(t *testing.T) {
	nodes := startTLSNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	id := awaitClusterID(t, nodes)
	var victim *testNode
	for _, n := range nodes {
		if n != leader {
			victim = n
		}
	}
	cfg := victim.log.cfg
	require.NoError(t, victim.log.Close())
	cfg.Dir = t.TempDir()
	l, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.Equal(t, "", l.ClusterID())
	rec := &recorder{}
	require.NoError(t, l.Start(rec))
	var live []*testNode
	for _, n := range nodes {
		if n != victim {
			live = append(live, n)
		}
	}
	require.Eventually(t, func() bool {
		tk, err := leaderOf(t, live, nil).log.Append(1, []byte("x"))
		return err == nil && tk.Wait() == nil
	}, 20*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return l.ClusterID() == id && len(rec.entries()) >= 1 }, 10*time.Second, 5*time.Millisecond)
}

// issue 22 item 4a: a directory of another cluster is refused, never merged. Cluster B's
// directory started at a member's address of cluster A: A's leader cannot reach it (neither
// side admits the other: ErrForeignCluster), it is sent nothing of A's log, and A cannot add
// it as a member.
func TestADirectoryOfAnotherClusterIsRefused(t *testing.T) {
	a := startTLSNodes(t, 3)
	leader := leaderOf(t, a, nil)
	idA := awaitClusterID(t, a)

	// Cluster B: one node (certificates of the same CA would not help it either: the id is
	// checked over any channel; plain TCP here and in A's stand-in below).
	b := startNodes(t, 1)
	leaderOf(t, b, nil)
	idB := awaitClusterID(t, b)
	require.NotEqual(t, idA, idB)
	bDir := b[0].log.cfg.Dir
	require.NoError(t, b[0].log.Close())

	var victim *testNode
	for _, n := range a {
		if n != leader {
			victim = n
		}
	}
	cfg := victim.log.cfg
	require.NoError(t, victim.log.Close())
	cfg.Dir = bDir
	l, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.Equal(t, idB, l.ClusterID())
	rec := &recorder{}
	require.NoError(t, l.Start(rec))
	bLast, bTerm := l.r.LastIndex(), l.r.CurrentTerm()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = leader.log.ping(ctx, raft.ServerAddress(cfg.RaftAddr))
	require.ErrorIs(t, err, ErrForeignCluster)
	require.Contains(t, err.Error(), idA)
	require.Contains(t, err.Error(), idB)
	err = l.ping(ctx, raft.ServerAddress(leader.log.cfg.RaftAddr))
	require.ErrorIs(t, err, ErrForeignCluster, "and the other way")

	// A's leader keeps trying to replicate to the member's address; each connection is refused.
	refused := l.peers.refusals.count()
	require.Eventually(t, func() bool { return l.peers.refusals.count() >= refused+3 }, 10*time.Second, 5*time.Millisecond)
	var live []*testNode
	for _, n := range a {
		if n != victim {
			live = append(live, n)
		}
	}
	// Under load the two may elect again meanwhile: append through whichever leads.
	require.Eventually(t, func() bool {
		tk, err := leaderOf(t, live, nil).log.Append(1, []byte("A's"))
		return err == nil && tk.Wait() == nil
	}, 20*time.Second, 5*time.Millisecond, "A commits with its two members")
	require.Eventually(t, func() bool { return l.peers.refusals.count() >= refused+6 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, bLast, l.r.LastIndex(), "nothing of A's log reached B's directory")
	require.Empty(t, rec.entries())
	require.Equal(t, idB, l.ClusterID())
	require.Equal(t, bTerm, l.r.CurrentTerm())
	require.Equal(t, idA, leader.log.ClusterID())

	require.Eventually(t, func() bool {
		err := leaderOf(t, live, nil).log.AddVoter(cfg.NodeID, cfg.RaftAddr)
		require.Error(t, err)
		return errors.Is(err, ErrForeignCluster)
	}, 20*time.Second, 5*time.Millisecond, "nor can it be added back")
}

// issue 22 item 4: members of a new cluster started with different --initial-cluster lists
// refuse each other instead of forming a cluster: neither side admits the other
// (ErrInitialClusterMismatch), no leader is elected, no cluster id made.
func TestMismatchedInitialClustersRefuse(t *testing.T) {
	p1, p2, p3 := Peer{ID: "n1", Addr: freeAddr(t)}, Peer{ID: "n2", Addr: freeAddr(t)}, Peer{ID: "n3", Addr: freeAddr(t)}
	open := func(self Peer, cluster []Peer) *Log {
		l, err := Open(Config{NodeID: self.ID, RaftAddr: self.Addr, Dir: t.TempDir(), Cluster: cluster,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, Logger: hclog.NewNullLogger()})
		require.NoError(t, err)
		require.NoError(t, l.Start(&recorder{}))
		t.Cleanup(func() { l.Close() })
		return l
	}
	l1 := open(p1, []Peer{p1, p2})
	l2 := open(p2, []Peer{p1, p2, p3})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l1.ping(ctx, raft.ServerAddress(p2.Addr))
	require.ErrorIs(t, err, ErrInitialClusterMismatch)
	require.Contains(t, err.Error(), "--initial-cluster")
	// Each asks the other for votes, election after election; every connection is refused.
	require.Eventually(t, func() bool {
		return l1.peers.refusals.count() >= 3 && l2.peers.refusals.count() >= 3
	}, 20*time.Second, 5*time.Millisecond)
	for _, l := range []*Log{l1, l2} {
		require.NotEqual(t, raft.Leader, l.r.State(), "%s", l.cfg.NodeID)
		id, _ := l.Leader()
		require.Equal(t, "", id, "%s knows no leader", l.cfg.NodeID)
		require.Equal(t, "", l.ClusterID())
	}
}
