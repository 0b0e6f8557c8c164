package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/certs"
	"github.com/combmq/comb/replica"
	"github.com/combmq/comb/report"
)

// Issue 15, "Done when": Queen's client behaviour holds against any node of a cluster, so the
// real-broker tests (every starter of a real broker goes through serveReal but the HTTPS
// tests', which start one node of their own) run unchanged against a node of an in-process
// 3-node cluster, its members authenticated by peer certificates of one CA, when
// COMB_TEST_TARGET says which:
//
//	COMB_TEST_TARGET=         one node, as comb serve without --node-id (the default)
//	COMB_TEST_TARGET=leader   the cluster's leader
//	COMB_TEST_TARGET=follower a follower, which forwards every request to the leader (forward.go)
//
// `make test-cluster-http` runs both. A test whose behaviour differs on a cluster by design
// calls skipOnCluster or skipOnFollower with the reason; one that reads a follower's own routes
// (/metrics/prometheus) waits for it to apply what the leader has (testServer.awaitApplied).

const targetEnv = "COMB_TEST_TARGET"

// testTarget is COMB_TEST_TARGET: "" (one node), "leader" or "follower"; any other value fails
// the test rather than run it somewhere the caller did not mean.
func testTarget(t testing.TB) string {
	t.Helper()
	switch v := os.Getenv(targetEnv); v {
	case "", "leader", "follower":
		return v
	default:
		t.Fatalf("%s=%q: want leader, follower or nothing", targetEnv, v)
		return ""
	}
}

// skipOnCluster skips t when the tests run against a cluster node; why says what differs there
// by design.
func skipOnCluster(t *testing.T, why string) {
	t.Helper()
	if target := testTarget(t); target != "" {
		t.Skipf("%s=%s: %s", targetEnv, target, why)
	}
}

// skipOnFollower skips t when the tests run against a follower; why says what differs there by
// design.
func skipOnFollower(t *testing.T, why string) {
	t.Helper()
	if target := testTarget(t); target == "follower" {
		t.Skipf("%s=%s: %s", targetEnv, target, why)
	}
}

// serveReal opens a real broker with cfg (the caller sets DataDir, and FS, Now and the like as
// the test needs) and serves it on a loopback port; under COMB_TEST_TARGET it starts a 3-node
// cluster from cfg instead and returns the target node's server. b is the broker whose state a
// test may read: the single node's, or the cluster leader's (a follower forwards every request
// there, and its own applied state may lag the leader's by an entry). stop closes everything
// cleanly (idempotent; the cleanup calls it too); a test that calls serveReal again with the
// same t and cfg.DataDir after stop reopens the same directories (the cluster with the same
// addresses, as a restarted comb serve would).
func serveReal(t *testing.T, cfg broker.Config) (ts *testServer, b *broker.Broker, stop func()) {
	t.Helper()
	if target := testTarget(t); target != "" {
		return serveCluster(t, cfg, target)
	}
	b, err := broker.Open(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(b, report.New(b.View()), Config{Logger: zerolog.Nop(), DefaultPopTimeout: 30 * time.Second})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			<-done
			require.NoError(t, b.Close())
		})
	}
	t.Cleanup(stop)
	return &testServer{t: t, srv: srv, addr: ln.Addr().String(), logs: &lockedWriter{w: &bytes.Buffer{}}}, b, stop
}

// clusterLayout is what a cluster keeps across a restart: its members, their directories and
// their HTTP addresses (raft's stored configuration names the raft addresses, and the leader
// announcements the HTTP ones).
type clusterLayout struct {
	peers     []replica.Peer
	dataDirs  []string // in cfg.FS (the disk when nil)
	raftDirs  []string // on the disk: raft-wal and its snapshot store do not take a vfs.FS
	httpAddrs []string
	// peerTLS is each node's peer certificate, from one CA made for the cluster (as `comb
	// certs` makes them): the raft port and forwarding run over mutual TLS, as in production.
	peerTLS []*tls.Config
}

// layouts maps a test and its data directory to the cluster started there, so a second
// serveReal on them (a restart) reopens the same cluster.
var layouts sync.Map // layoutKey -> *clusterLayout

type layoutKey struct {
	t   *testing.T
	dir string
}

// e2eRaft are raft's own defaults, what comb serve runs with (1 s heartbeat and election,
// 500 ms leader lease): these suites run under the race detector on two cores shared with other
// work, where with 300 ms timings a leader starved of the CPU still lost its lease mid-test now
// and then (a 503 in CI), and with the broker tests' 200/200/100 ms often. An election takes
// one to two seconds, the fencing wait about half a second.
var e2eRaft = struct{ heartbeat, election, lease time.Duration }{time.Second, time.Second, 500 * time.Millisecond}

// clusterNode is one comb of the cluster: its replicated log, broker and HTTP server.
type clusterNode struct {
	id   string
	log  *replica.Log
	b    *broker.Broker
	srv  *Server
	addr string
	done chan error
	// peerDone ends with ServePeer (Shutdown closes its listener too).
	peerDone chan error
}

// serveCluster is serveReal's cluster: three nodes on loopback, each node's broker opened from
// cfg with its own data directory under cfg.DataDir (n1, n2, n3) over a replicated log, served
// with Config.Cluster set and its HTTP address announced, as comb serve wires them. It returns
// once the leader is ready and every node knows the leader's HTTP address, so a follower
// forwards the first request at once.
func serveCluster(t *testing.T, cfg broker.Config, target string) (*testServer, *broker.Broker, func()) {
	t.Helper()
	key := layoutKey{t: t, dir: cfg.DataDir}
	v, reopened := layouts.Load(key)
	if !reopened {
		lay := &clusterLayout{}
		for i := range 3 {
			id := fmt.Sprintf("n%d", i+1)
			lay.peers = append(lay.peers, replica.Peer{ID: id})
			lay.dataDirs = append(lay.dataDirs, filepath.Join(cfg.DataDir, id))
			raftDir := filepath.Join(cfg.DataDir, id, "raft") // as comb serve: <data>/raft
			if cfg.FS != nil {
				raftDir = filepath.Join(t.TempDir(), "raft")
			}
			lay.raftDirs = append(lay.raftDirs, raftDir)
			lay.httpAddrs = append(lay.httpAddrs, "127.0.0.1:0")
		}
		lay.peerTLS = clusterPeerTLS(t, lay.peers)
		v = lay
		layouts.Store(key, lay)
		t.Cleanup(func() { layouts.Delete(key) })
	}
	lay := v.(*clusterLayout)

	nodes := make([]*clusterNode, len(lay.peers))
	var once sync.Once
	stop := func() { once.Do(func() { stopCluster(t, nodes) }) }
	t.Cleanup(stop)
	// The HTTP listeners first: their ports are the addresses the nodes announce. Then the raft
	// ports, picked while those are held and bound by every node's transport before any node
	// starts raft (and dials), so no port is handed out twice.
	lns := make([]net.Listener, len(lay.peers))
	for i := range lns {
		ln, err := net.Listen("tcp", lay.httpAddrs[i])
		require.NoError(t, err)
		lns[i], lay.httpAddrs[i] = ln, ln.Addr().String()
		t.Cleanup(func() { ln.Close() }) // once served, Shutdown closed it already
	}
	if !reopened {
		reserveLoopbackPorts(t, lay.peers)
	}
	for i := range nodes {
		nodes[i] = openClusterNode(t, cfg, lay, i)
	}
	for i, n := range nodes {
		require.NoError(t, n.log.Start(n.b))
		n.srv = New(n.b, report.New(n.b.View()), Config{Logger: zerolog.Nop(), DefaultPopTimeout: 30 * time.Second, Cluster: n.log})
		n.done, n.peerDone = make(chan error, 1), make(chan error, 1)
		go func() { n.done <- n.srv.Serve(lns[i]) }()
		go func() { n.peerDone <- n.srv.ServePeer(n.log.PeerHTTP()) }() // what followers forward to
	}
	leader := awaitClusterLeader(t, nodes)

	node := leader
	if target == "follower" {
		for _, n := range nodes {
			if n != leader {
				node = n
				break
			}
		}
	}
	ts := &testServer{t: t, srv: node.srv, addr: node.addr, logs: &lockedWriter{w: &bytes.Buffer{}}, retryRefusals: true}
	if node != leader {
		ts.catchUp = func() { awaitApplied(t, node, leader) }
	}
	return ts, leader.b, stop
}

// reserveLoopbackPorts gives every peer a free loopback address, all distinct.
func reserveLoopbackPorts(t *testing.T, peers []replica.Peer) {
	t.Helper()
	held := make([]net.Listener, len(peers))
	for i := range peers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		held[i], peers[i].Addr = ln, ln.Addr().String()
	}
	for _, ln := range held {
		require.NoError(t, ln.Close())
	}
}

// awaitApplied waits until follower has applied every entry leader had applied at the call.
func awaitApplied(t *testing.T, follower, leader *clusterNode) {
	t.Helper()
	rs, _ := leader.b.Replication()
	want := rs.AppliedLSN
	require.Eventually(t, func() bool {
		rs, _ := follower.b.Replication()
		return rs.AppliedLSN >= want
	}, 5*time.Second, time.Millisecond, "follower %s never applied LSN %d", follower.id, want)
}

// openClusterNode opens node i in comb serve's order: a snapshot another node sent is
// installed, the replicated log opened (its transport listens), the broker opened over it.
// serveCluster then starts raft with the broker as its follower side, and the HTTP server.
func openClusterNode(t *testing.T, cfg broker.Config, lay *clusterLayout, i int) *clusterNode {
	t.Helper()
	self := lay.peers[i]
	if cfg.FS == nil {
		_, err := replica.PrepareDataDir(lay.dataDirs[i], lay.raftDirs[i], nil)
		require.NoError(t, err)
	}
	l, err := replica.Open(replica.Config{
		NodeID: self.ID, RaftAddr: self.Addr, HTTPAddr: lay.httpAddrs[i], Dir: lay.raftDirs[i], Cluster: lay.peers,
		HeartbeatTimeout: e2eRaft.heartbeat, ElectionTimeout: e2eRaft.election, LeaderLeaseTimeout: e2eRaft.lease,
		Logger: e2eRaftLogger(self.ID), PeerTLS: lay.peerTLS[i],
	})
	require.NoError(t, err)
	ncfg := cfg
	ncfg.DataDir, ncfg.Replicated = lay.dataDirs[i], l
	b, err := broker.Open(ncfg)
	if err != nil {
		l.Close()
	}
	require.NoError(t, err)
	return &clusterNode{id: self.ID, log: l, b: b, addr: lay.httpAddrs[i]}
}

// clusterPeerTLS makes a CA and a certificate for each peer (127.0.0.1) and returns each one's
// replica.Config.PeerTLS, in peers' order.
func clusterPeerTLS(t *testing.T, peers []replica.Peer) []*tls.Config {
	t.Helper()
	dir := t.TempDir()
	var nodes []certs.Node
	for _, p := range peers {
		nodes = append(nodes, certs.Node{ID: p.ID, Hosts: []string{"127.0.0.1"}})
	}
	_, _, err := certs.Make(dir, nodes, certs.Options{})
	require.NoError(t, err)
	out := make([]*tls.Config, len(peers))
	for i, p := range peers {
		out[i], err = replica.LoadPeerTLS(certs.CertFile(dir, p.ID), certs.KeyFile(dir, p.ID), certs.CAFile(dir))
		require.NoError(t, err)
	}
	return out
}

// awaitClusterLeader returns the ready leader once every node names it and knows its HTTP
// address.
func awaitClusterLeader(t *testing.T, nodes []*clusterNode) *clusterNode {
	t.Helper()
	var leader *clusterNode
	require.Eventually(t, func() bool {
		leader = nil
		for _, n := range nodes {
			if n.log.Leading() {
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if id, addr := n.log.LeaderHTTP(); id != leader.id || addr != leader.addr {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond, "no leader whose HTTP address every node knows")
	return leader
}

// stopCluster stops every HTTP server, waits until the followers applied what the leader has,
// then closes the followers' brokers and the leader's last.
//
// Why this order: an entry applied to a broker that is closing is refused (the next start
// applies it again), and the race detector sees broker.enter's in-flight Add while Close waits
// on that count (seen twice in -race runs before this catch-up). Caught up first, the followers
// receive nothing more while they close unless the leader appends on its own meanwhile. Closed
// first, the leader would commit its last flush pass to followers about to close, and leave
// them time to elect one of them while they close. Without its quorum the leader's last flush
// pass does not commit, which its Close reports as no error (the next start applies the log
// again) after the lease timeout.
func stopCluster(t *testing.T, nodes []*clusterNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range nodes {
		if n != nil && n.srv != nil {
			_ = n.srv.Shutdown(ctx)
			<-n.done
			<-n.peerDone
		}
	}
	var leader *clusterNode
	var order []*clusterNode
	for _, n := range nodes {
		switch {
		case n == nil:
		case n.log.Leading():
			leader = n
		default:
			order = append(order, n)
		}
	}
	if leader != nil {
		for _, f := range order {
			awaitApplied(t, f, leader)
		}
		order = append(order, leader)
	}
	var errs []error
	for _, n := range order {
		if err := n.b.Close(); err != nil { // closes its replicated log too
			errs = append(errs, fmt.Errorf("closing node %s: %w", n.id, err))
		}
	}
	require.NoError(t, errors.Join(errs...))
}

// e2eRaftLogger is silent unless COMB_TEST_RAFT_LOG is set, as in the broker's cluster tests.
func e2eRaftLogger(id string) hclog.Logger {
	if os.Getenv("COMB_TEST_RAFT_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info})
}
