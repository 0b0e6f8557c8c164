//go:build cluster

package clustertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Network partitions on loopback (issue 22): every node runs with a group id of its own
// (nodeGID), and a cut from node A to node B is one iptables rule in a chain the harness owns,
// matching packets of A's sockets (owner module, --gid-owner) to B's raft and HTTP ports, and
// dropping them: A's connections to B hang, as across a real partition, while B's connections
// to A (and their answers, which go to B's ephemeral ports) pass. Cutting both directions
// isolates a pair; cutting every pair of a node isolates it. The harness's own client is not
// cut (its process keeps gid 0): it still reaches an isolated node, as a client on the
// node's side of the partition would. Needs root and iptables (apt-get install iptables);
// CLUSTER_PARTITIONS=0 leaves the partition faults out instead.

// nodeGID is the group id node i (0-based) runs with when partitions are on.
func nodeGID(i int) uint32 { return 47301 + uint32(i) }

// netCuts owns the harness's iptables chain and the cuts in it. Safe for concurrent use.
type netCuts struct {
	chain string
	mu    sync.Mutex
	cuts  map[[2]*node]bool
}

// partitionsUnavailable says why partitions cannot run here ("" when they can).
func partitionsUnavailable() string {
	if os.Geteuid() != 0 {
		return "the harness is not root (iptables rules and a group id per node need it)"
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return "iptables is not installed (Debian: apt-get install iptables)"
	}
	return ""
}

// newNetCuts creates the chain and hooks it into OUTPUT; close removes both.
func newNetCuts() (*netCuts, error) {
	c := &netCuts{chain: fmt.Sprintf("COMB-CT-%d", os.Getpid()), cuts: map[[2]*node]bool{}}
	if err := ipt("-N", c.chain); err != nil {
		return nil, err
	}
	if err := ipt("-I", "OUTPUT", "1", "-j", c.chain); err != nil {
		_ = ipt("-X", c.chain)
		return nil, err
	}
	return c, nil
}

func ipt(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func (c *netCuts) rule(op string, from, to *node) error {
	return ipt(op, c.chain, "-m", "owner", "--gid-owner", fmt.Sprint(from.gid), "-p", "tcp", "-d", "127.0.0.1",
		"-m", "multiport", "--dports", port(to.raftAddr)+","+port(to.httpAddr), "-j", "DROP")
}

// set cuts (on) or heals the direction from → to.
func (c *netCuts) set(from, to *node, on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]*node{from, to}
	if c.cuts[k] == on {
		return nil
	}
	op := "-A"
	if !on {
		op = "-D"
	}
	if err := c.rule(op, from, to); err != nil {
		return err
	}
	if on {
		c.cuts[k] = true
	} else {
		delete(c.cuts, k)
	}
	from.setCut(c.cutsOfLocked(from) > 0)
	to.setCut(c.cutsOfLocked(to) > 0)
	return nil
}

func (c *netCuts) cutsOfLocked(n *node) int {
	k := 0
	for p := range c.cuts {
		if p[0] == n || p[1] == n {
			k++
		}
	}
	return k
}

// isolate cuts (or heals) every link of n with the others, both ways.
func (c *netCuts) isolate(n *node, nodes []*node, on bool) error {
	var errs []error
	for _, o := range nodes {
		if o != n {
			errs = append(errs, c.set(n, o, on), c.set(o, n, on))
		}
	}
	return errors.Join(errs...)
}

// close heals every cut and removes the chain.
func (c *netCuts) close() error {
	c.mu.Lock()
	var pairs [][2]*node
	for p := range c.cuts {
		pairs = append(pairs, p)
	}
	c.mu.Unlock()
	var errs []error
	for _, p := range pairs {
		errs = append(errs, c.set(p[0], p[1], false))
	}
	errs = append(errs, ipt("-D", "OUTPUT", "-j", c.chain), ipt("-F", c.chain), ipt("-X", c.chain))
	return errors.Join(errs...)
}

// healedRecently is how long after its last cut healed a node's /health may still be
// unhealthy without a finding, on top of unwellFor: its peers' connections to it hung while it
// was cut, and reconnect on the next SYN retransmission (up to about 4 s later).
const healedRecently = 6 * time.Second
