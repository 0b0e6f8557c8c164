package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/replica"
	"github.com/combmq/comb/vfs"
)

// clusterEnv maps the replication flags to their environment fallbacks.
var clusterEnv = [][2]string{
	{"node-id", "COMB_NODE_ID"},
	{"raft-addr", "COMB_RAFT_ADDR"},
	{"initial-cluster", "COMB_INITIAL_CLUSTER"},
	{"initial-cluster-state", "COMB_INITIAL_CLUSTER_STATE"},
	{"peer-cert-file", "COMB_PEER_CERT_FILE"},
	{"peer-key-file", "COMB_PEER_KEY_FILE"},
	{"peer-trusted-ca-file", "COMB_PEER_TRUSTED_CA_FILE"},
	{"peer-insecure", "COMB_PEER_INSECURE"},
	{"election-timeout", "COMB_ELECTION_TIMEOUT"},
}

// clusterFlags are the flags of a replicated comb (issue 15, docs/replication.md), in etcd's
// convention; without --node-id comb is the single node it always was.
type clusterFlags struct {
	nodeID, raftAddr, initialCluster, clusterState *string
	// Peer TLS (issue 22, etcd's names): the members authenticate each other on the raft port
	// with certificates of one cluster CA; --peer-insecure runs without, on purpose.
	peerCert, peerKey, peerCA *string
	peerInsecure              *bool
	electionTimeout           unitDuration
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	c.nodeID = fs.String("node-id", "", "this node's id in a replicated cluster, e.g. n1; empty = a single node (env COMB_NODE_ID)")
	c.raftAddr = fs.String("raft-addr", "", "host:port raft listens on and other nodes reach it at, e.g. 127.0.0.1:7001 (env COMB_RAFT_ADDR)")
	c.initialCluster = fs.String("initial-cluster", "", "the voting members when the cluster is first started, e.g. n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003; ignored once this node has raft state (env COMB_INITIAL_CLUSTER)")
	c.peerCert = fs.String("peer-cert-file", "", "this node's certificate (PEM) for the raft port, presented to the other members as server and as client; made by `comb certs` (env COMB_PEER_CERT_FILE)")
	c.peerKey = fs.String("peer-key-file", "", "the private key (PEM) of --peer-cert-file (env COMB_PEER_KEY_FILE)")
	c.peerCA = fs.String("peer-trusted-ca-file", "", "the cluster CA's certificate (PEM; two during a CA rollover) every member's certificate must chain to; a connection without one is refused (env COMB_PEER_TRUSTED_CA_FILE)")
	c.peerInsecure = fs.Bool("peer-insecure", false, "run the cluster's peer connections without TLS or authentication: anyone who reaches a raft port can take the cluster over and read forwarded tokens; for a test on one machine only (env COMB_PEER_INSECURE)")
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
	peerTLS, err := c.peerTLS()
	if err != nil {
		return replica.Config{}, false, err
	}
	cfg = replica.Config{NodeID: *c.nodeID, RaftAddr: *c.raftAddr, HTTPAddr: advertised, Dir: filepath.Join(dataDir, layout.Raft), Cluster: peers,
		Join: *c.clusterState == "existing", PeerTLS: peerTLS}
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
	lock, err := vfs.OS.Lock(filepath.Join(cfg.Dir, layout.Lock))
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

// peerTLS loads the three peer TLS files, or returns nil with --peer-insecure. A cluster node
// has one or the other: secure by default (CockroachDB's --insecure model).
//
// Errors: neither, both, only some of the three files, or files replica.LoadPeerTLS refuses.
func (c *clusterFlags) peerTLS() (*tls.Config, error) {
	given := 0
	for _, f := range []*string{c.peerCert, c.peerKey, c.peerCA} {
		if *f != "" {
			given++
		}
	}
	switch {
	case *c.peerInsecure && given > 0:
		return nil, errors.New("--peer-insecure and the --peer-*-file flags exclude each other")
	case *c.peerInsecure:
		return nil, nil
	case given == 0:
		return nil, errors.New("a cluster node authenticates its peers: give --peer-cert-file, --peer-key-file and --peer-trusted-ca-file " +
			"(`comb certs --dir ./certs --nodes n1,n2,n3 --hosts 127.0.0.1` makes them), or --peer-insecure to run the raft port " +
			"without TLS, where anyone who reaches it can take the cluster over")
	case given < 3:
		return nil, errors.New("--peer-cert-file, --peer-key-file and --peer-trusted-ca-file go together")
	}
	return replica.LoadPeerTLS(*c.peerCert, *c.peerKey, *c.peerCA)
}

// insecureWarnEvery is how often a node with --peer-insecure says so again.
const insecureWarnEvery = time.Hour

// warnInsecure logs that peer TLS is off now and every `every` (insecureWarnEvery) until stop
// is called.
func warnInsecure(log zerolog.Logger, every time.Duration) (stop func()) {
	warn := func() {
		log.Warn().Str("flag", "--peer-insecure").Msg("peer TLS is off: the raft port takes connections from anyone who reaches it, who can take the cluster over and read the tokens followers forward; use --peer-cert-file, --peer-key-file and --peer-trusted-ca-file (docs/operations.md)")
	}
	warn()
	t := time.NewTicker(every)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				warn()
			case <-done:
				return
			}
		}
	}()
	return func() { t.Stop(); close(done) }
}
