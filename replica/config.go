package replica

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Peer is one voting member of the cluster: its node id and raft address.
type Peer struct {
	ID   string // --node-id, e.g. "n1"
	Addr string // --raft-addr, host:port
}

// ParseCluster reads --initial-cluster in etcd's convention,
// "n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003".
//
// Errors: an item without "=", a member CheckPeer refuses, or an id or a
// raft address named twice (raft refuses two members at one address).
func ParseCluster(s string) ([]Peer, error) {
	var peers []Peer
	seen, seenAddr := map[string]bool{}, map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addr, ok := strings.Cut(item, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("replica: --initial-cluster item %q: want id=host:port", item)
		}
		if err := CheckPeer(Peer{ID: id, Addr: addr}); err != nil {
			return nil, fmt.Errorf("replica: --initial-cluster item %q: %w", item, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("replica: --initial-cluster names %q twice", id)
		}
		if seenAddr[addr] {
			return nil, fmt.Errorf("replica: --initial-cluster names raft address %q twice", addr)
		}
		seen[id], seenAddr[addr] = true, true
		peers = append(peers, Peer{ID: id, Addr: addr})
	}
	if len(peers) == 0 {
		return nil, errors.New("replica: --initial-cluster is empty")
	}
	return peers, nil
}

// CheckPeer checks a member's id (1 to 255 bytes of letters, digits, '-',
// '_' and '.': it travels in markers with a one-byte length) and raft
// address: host:port with a host the other nodes can dial (not empty, not a
// wildcard such as 0.0.0.0 or ::) and a port from 1 to 65535. raft takes any
// string as an address, so a typo here would otherwise commit a voter no
// node can reach.
func CheckPeer(p Peer) error {
	if p.ID == "" || len(p.ID) > 255 || strings.IndexFunc(p.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return fmt.Errorf("member id %q: 1 to 255 letters, digits, '-', '_' or '.'", p.ID)
	}
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil || host == "" {
		return fmt.Errorf("member %s: raft address %q is not host:port", p.ID, p.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("member %s: raft address %q: port is not a number from 1 to 65535", p.ID, p.Addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("member %s: raft address %q: the other nodes dial it, so it needs a concrete host, not a wildcard", p.ID, p.Addr)
	}
	return nil
}

// comb's raft timing (issue 22: failover within a second). raft's defaults
// (1 s heartbeat and election timeouts) made the first push after kill -9 of
// the leader take 1.6-2.6 s. A follower starts an election after
// HeartbeatTimeout to 2x without word from the leader, and the leader
// heartbeats every HeartbeatTimeout/10 (25 ms); a split vote costs one
// ElectionTimeout to 2x more. LeaderLeaseTimeout is how long a leader cut
// off from its quorum keeps acting as one (raft requires it <= the
// heartbeat timeout); the broker's fence after an election covers it.
// docs/benchmarks.md has the failover and elections-under-load figures.
const (
	DefaultHeartbeatTimeout   = 250 * time.Millisecond
	DefaultElectionTimeout    = 250 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
)

// Config configures Open.
type Config struct {
	NodeID   string // this node's id; must be in Cluster
	RaftAddr string // host:port raft listens on and advertises (a concrete address, not 0.0.0.0)
	// HTTPAddr is the host:port other nodes forward clients' requests to
	// while this node leads (announce.go); "" announces nothing. `comb
	// serve` derives it from --addr (AdvertisedHTTPAddr).
	HTTPAddr string
	// Dir holds raft's own state: <Dir>/wal (log and stable store,
	// raft-wal) and <Dir>/snapshots. The broker passes <data>/raft.
	Dir string
	// Cluster is the initial voting membership, used once: on a node with
	// no raft state yet every member bootstraps the same configuration.
	Cluster []Peer
	// Join: this node joins a running cluster (etcd's
	// --initial-cluster-state existing) and bootstraps nothing; the leader
	// adds it (AddVoter) and sends it the state.
	Join bool
	// PeerTLS authenticates the members to each other on the raft port, raft's RPCs and
	// forwarded requests alike (peer.go): LoadPeerTLS's configuration. nil runs the peer
	// connections over plain TCP, without authentication (comb serve refuses that unless
	// --peer-insecure); the cluster id is checked either way.
	PeerTLS *tls.Config

	// Raft timing; zero takes comb's defaults (DefaultHeartbeatTimeout,
	// DefaultElectionTimeout, DefaultLeaderLeaseTimeout), not raft's 1 s.
	// Tests shorten them.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// How many entries raft keeps behind a snapshot, and how many new ones
	// start the next; zero takes raft's defaults (10,240 and 8,192). Tests
	// shorten them.
	TrailingLogs      uint64
	SnapshotThreshold uint64
	// WALSegmentBytes is the size of raft-wal's segment files (0: its
	// default, 64 MiB). Raft's log drops whole segment files behind a
	// snapshot, so a node falls behind the log only past one; tests make
	// them small to reach a snapshot install.
	WALSegmentBytes int

	// StartLSN is the LSN this node's state already covers plus one (the
	// broker's snapshots): a new leader numbers on from the larger of it
	// and what it applied, so LSNs never run backwards.
	StartLSN uint64

	Logger hclog.Logger // nil = warnings and errors to stderr; `comb serve` passes NewHCLogger
}

// Validate checks the required fields and that Cluster names this node at RaftAddr.
func (c *Config) Validate() error {
	if c.NodeID == "" || c.RaftAddr == "" || c.Dir == "" {
		return errors.New("replica: NodeID, RaftAddr and Dir are required")
	}
	for _, p := range c.Cluster {
		if p.ID == c.NodeID {
			if p.Addr != c.RaftAddr {
				return fmt.Errorf("replica: --initial-cluster gives %s the address %s, --raft-addr says %s", c.NodeID, p.Addr, c.RaftAddr)
			}
			return nil
		}
	}
	return fmt.Errorf("replica: --initial-cluster does not name this node (%s)", c.NodeID)
}

// AdvertisedHTTPAddr is the HTTP address other nodes reach this one at: listen
// (--addr) as given, or, when its host is empty or a wildcard (0.0.0.0, ::),
// the host of raftAddr with listen's port: a node reachable for raft at that
// host is reachable there for HTTP too.
//
// Errors: an address that is not host:port, or port 0 (the port the
// listener would pick is not known before it listens).
func AdvertisedHTTPAddr(listen, raftAddr string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("replica: HTTP address %q: %w", listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("replica: HTTP address %q: a cluster needs a fixed port to forward to", listen)
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return listen, nil
	}
	rhost, _, err := net.SplitHostPort(raftAddr)
	if err != nil {
		return "", fmt.Errorf("replica: raft address %q: %w", raftAddr, err)
	}
	return net.JoinHostPort(rhost, port), nil
}
