package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/replica"
	"github.com/combmq/comb/vfs"
)

// clusterEnv maps the replication flags to their environment fallbacks.
var clusterEnv = [][2]string{
	{"node-id", "COMB_NODE_ID"},
	{"raft-addr", "COMB_RAFT_ADDR"},
	{"initial-cluster", "COMB_INITIAL_CLUSTER"},
	{"initial-cluster-state", "COMB_INITIAL_CLUSTER_STATE"},
	{"peer-ca", "COMB_PEER_CA"},
	{"election-timeout", "COMB_ELECTION_TIMEOUT"},
}

// clusterFlags are the flags of a replicated comb (issue 15, docs/replication.md), in etcd's
// convention; without --node-id comb is the single node it always was.
type clusterFlags struct {
	nodeID, raftAddr, initialCluster, clusterState *string
	peerCA                                         *string
	electionTimeout                                unitDuration
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	c.nodeID = fs.String("node-id", "", "this node's id in a replicated cluster, e.g. n1; empty = a single node (env COMB_NODE_ID)")
	c.raftAddr = fs.String("raft-addr", "", "host:port raft listens on and other nodes reach it at, e.g. 127.0.0.1:7001 (env COMB_RAFT_ADDR)")
	c.initialCluster = fs.String("initial-cluster", "", "the voting members when the cluster is first started, e.g. n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003; ignored once this node has raft state (env COMB_INITIAL_CLUSTER)")
	c.peerCA = fs.String("peer-ca", "", "with --tls-cert on a cluster: PEM file of the CA(s) the other nodes' certificates chain to, trusted when a follower forwards to the leader; empty = the system's roots (env COMB_PEER_CA)")
	c.electionTimeout = millis(replica.DefaultHeartbeatTimeout)
	fs.Var(&c.electionTimeout, "election-timeout", "how long a follower waits without word from the leader before it starts an election (ms or a duration; raft's heartbeat and election timeout and the leader lease, the leader heartbeats 10 times in it); raise it on slow or loaded networks (env COMB_ELECTION_TIMEOUT)")
	c.clusterState = fs.String("initial-cluster-state", "new", "new: this node is one of the members that start the cluster; existing: it joins a running cluster, whose leader adds it (POST /api/v1/cluster/members) and sends it the state (env COMB_INITIAL_CLUSTER_STATE)")
}

// config checks the flags: all three or none. ok is false for a single node. httpAddr is
// --addr: the leader announces it (with the host of --raft-addr when it listens on every
// interface) and followers forward clients' requests there.
func (c *clusterFlags) config(dataDir, httpAddr string) (cfg replica.Config, ok bool, err error) {
	if *c.nodeID == "" && *c.raftAddr == "" && *c.initialCluster == "" {
		return replica.Config{}, false, nil
	}
	if *c.nodeID == "" || *c.raftAddr == "" || *c.initialCluster == "" {
		return replica.Config{}, false, errors.New("--node-id, --raft-addr and --initial-cluster go together")
	}
	peers, err := replica.ParseCluster(*c.initialCluster)
	if err != nil {
		return replica.Config{}, false, err
	}
	if *c.clusterState != "new" && *c.clusterState != "existing" {
		return replica.Config{}, false, fmt.Errorf("--initial-cluster-state is new or existing, not %q", *c.clusterState)
	}
	advertised, err := replica.AdvertisedHTTPAddr(httpAddr, *c.raftAddr)
	if err != nil {
		return replica.Config{}, false, fmt.Errorf("--addr: %w", err)
	}
	cfg = replica.Config{NodeID: *c.nodeID, RaftAddr: *c.raftAddr, HTTPAddr: advertised, Dir: filepath.Join(dataDir, "raft"), Cluster: peers,
		Join: *c.clusterState == "existing"}
	if et := c.electionTimeout.d; et < 20*time.Millisecond || et > time.Minute {
		return replica.Config{}, false, fmt.Errorf("--election-timeout %s: want 20ms to 1m (default %s)", et, replica.DefaultHeartbeatTimeout)
	} else {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = et, et, et
	}
	if err := cfg.Validate(); err != nil {
		return replica.Config{}, false, err
	}
	return cfg, true, nil
}

// forwardTo is what httpapi forwards through: the replicated log, or nil on a single node (not
// a nil *replica.Log in a non-nil interface).
func forwardTo(l *replica.Log) httpapi.Cluster {
	if l == nil {
		return nil
	}
	return l
}

// openReplica opens the replicated log when ok; a nil interface otherwise, so
// a single node passes no ReplicatedLog to the broker. It first takes
// <data>/raft/LOCK, held until the process ends (lock.Close, or exit: the
// flock dies with the process and with a re-exec, whose descriptors close on
// exec). The broker's <data>/LOCK comes later, after PrepareDataDir has
// swapped a received snapshot into the data directory and after raft-wal
// opened its bolt file, which waits forever for another holder: without this
// lock a second `comb serve` on a live node's directory hung without a word,
// and could install a snapshot under the live broker.
//
// Errors: broker.ErrLocked (wrapped) when another process holds the lock;
// PrepareDataDir's and replica.Open's.
func openReplica(cfg replica.Config, ok bool) (*replica.Log, broker.ReplicatedLog, io.Closer, error) {
	if !ok {
		return nil, nil, nil, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("replica: %w", err)
	}
	lock, err := vfs.OS.Lock(filepath.Join(cfg.Dir, "LOCK"))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, nil, nil, fmt.Errorf("%s: %w (is another comb serving it?)", filepath.Dir(cfg.Dir), broker.ErrLocked)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("replica: %w", err)
	}
	// A snapshot another node sent (this node was far behind, or new) is
	// installed into the data directory before the broker opens it.
	if _, err := replica.PrepareDataDir(filepath.Dir(cfg.Dir), cfg.Dir, cfg.Logger); err != nil {
		lock.Close()
		return nil, nil, nil, err
	}
	l, err := replica.Open(cfg)
	if err != nil {
		lock.Close()
		return nil, nil, nil, err
	}
	return l, l, lock, nil
}

// peerCAs reads --peer-ca (nil when it is not set).
//
// Errors: the file's, or a file with no PEM certificate.
func (c *clusterFlags) peerCAs() (*x509.CertPool, error) {
	if *c.peerCA == "" {
		return nil, nil
	}
	data, err := os.ReadFile(*c.peerCA)
	if err != nil {
		return nil, fmt.Errorf("--peer-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--peer-ca %s: no PEM certificate in it", *c.peerCA)
	}
	return pool, nil
}
