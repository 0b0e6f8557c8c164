package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A local cluster for the cluster shape of a comparison (issue 23: "the cluster shape in make
// bench-compare"): N `comb serve` processes of one binary on loopback, with peer TLS from that
// binary's `comb certs` (the default a cluster runs with since issue 22), each on a fresh data
// directory. Every fsync, raft round trip and follower apply shares this machine's cores, so
// its figures are a floor for N machines, not what they give.

// clusterServeFlags are the serve flags a cluster run sets itself for each node, on top of
// reservedServeFlags.
var clusterServeFlags = []string{"node-id", "raft-addr", "initial-cluster", "initial-cluster-state",
	"peer-cert-file", "peer-key-file", "peer-trusted-ca-file", "peer-insecure"}

// clusterReadyTimeout bounds a cluster's start until one node leads and every other follows it
// and knows its HTTP address: an election takes a few hundred ms, but a loaded 2-core box
// can stall three starts for seconds.
const clusterReadyTimeout = 90 * time.Second

// Cluster is a running local cluster: its ready leader and the others.
type Cluster struct {
	Leader    *Server
	Followers []*Server
	nodes     []*Server
	dir       string // certificates; removed by Stop
}

// FollowerPIDs are the process ids of every node but the leader.
func (c *Cluster) FollowerPIDs() []int {
	pids := make([]int, len(c.Followers))
	for i, f := range c.Followers {
		pids[i] = f.PID
	}
	return pids
}

// CheckClusterServeArgs refuses serve flags that a cluster run sets itself (ErrConfig).
func CheckClusterServeArgs(args []string) error {
	if err := CheckServeArgs(args); err != nil {
		return err
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, r := range clusterServeFlags {
			if name == r {
				return fmt.Errorf("serve flag %q: a cluster run sets each node's identity, raft port and peer TLS itself: %w", a, ErrConfig)
			}
		}
	}
	return nil
}

// StartCluster runs nodes (3 or 5) `binary serve --log-level warn <serveArgs>` with node ids
// n1..nN, free loopback HTTP and raft ports, one --initial-cluster and peer TLS certificates
// made by `binary certs`, and returns once one node reports role leader on /health and every
// other reports follower with the leader's HTTP address known (so a push through the leader
// is what is measured, not an election). On error nothing is left running and every directory
// is removed; the error quotes the nodes' output.
func StartCluster(ctx context.Context, binary string, serveArgs []string, dataRoot string, nodes int) (*Cluster, error) {
	if nodes != 3 && nodes != 5 {
		return nil, fmt.Errorf("a cluster of %d nodes (want 3 or 5): %w", nodes, ErrConfig)
	}
	if err := CheckClusterServeArgs(serveArgs); err != nil {
		return nil, err
	}
	var err error
	for attempt := 1; attempt <= serverStartAttempts; attempt++ {
		var c *Cluster
		var exited bool
		c, exited, err = startClusterOnce(ctx, binary, serveArgs, dataRoot, nodes)
		if err == nil {
			return c, nil
		}
		if !exited || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// startClusterOnce is one start; exited reports that a node ended on its own before the
// cluster was ready (a port taken meanwhile: worth another try).
func startClusterOnce(ctx context.Context, binary string, serveArgs []string, dataRoot string, nodes int) (c *Cluster, exited bool, err error) {
	dir, err := os.MkdirTemp(dataRoot, "comb-bench-cluster-")
	if err != nil {
		return nil, false, fmt.Errorf("fresh cluster directory under %s: %w", dataRoot, err)
	}
	c = &Cluster{dir: dir}
	ids := make([]string, nodes)
	httpPorts, raftPorts := make([]int, nodes), make([]int, nodes)
	var initial []string
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i+1)
		if httpPorts[i], err = freeLoopbackPort(); err == nil {
			raftPorts[i], err = freeLoopbackPort()
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, false, err
		}
		initial = append(initial, ids[i]+"=127.0.0.1:"+strconv.Itoa(raftPorts[i]))
	}
	pki := filepath.Join(dir, "certs")
	if out, err := exec.CommandContext(ctx, binary, "certs", "--dir", pki, "--nodes", strings.Join(ids, ","), "--hosts", "127.0.0.1").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, false, fmt.Errorf("%s certs: %w: %s", binary, err, strings.TrimSpace(string(out)))
	}
	for i, id := range ids {
		nodeDir, err := os.MkdirTemp(dataRoot, "comb-bench-"+id+"-")
		if err != nil {
			c.stopAll()
			return nil, false, fmt.Errorf("fresh data directory under %s: %w", dataRoot, err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPorts[i]))
		args := append([]string{"serve", "--log-level", "warn"}, serveArgs...)
		args = append(args, "--addr", addr, "--data-dir", filepath.Join(nodeDir, "data"),
			"--node-id", id, "--raft-addr", "127.0.0.1:"+strconv.Itoa(raftPorts[i]), "--initial-cluster", strings.Join(initial, ","),
			"--peer-cert-file", filepath.Join(pki, id+".crt"), "--peer-key-file", filepath.Join(pki, id+".key"),
			"--peer-trusted-ca-file", filepath.Join(pki, "ca.crt"))
		s, err := spawn(binary, args, nodeDir, "http://"+addr)
		if err != nil {
			c.stopAll()
			return nil, false, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.waitReady(ctx); err != nil {
		for _, n := range c.nodes {
			select {
			case <-n.exited:
				exited = true
			default:
			}
		}
		c.stopAll()
		return nil, exited, err
	}
	return c, false, nil
}

// nodeHealth is what waitReady reads of a node's GET /health (httpapi/health.go).
type nodeHealth struct {
	Role   string `json:"role"`
	Leader *struct {
		ID       string  `json:"id"`
		HTTPAddr *string `json:"httpAddr"`
	} `json:"leader"`
}

// waitReady polls every node's /health every 50 ms until one leads and the others follow it
// with its HTTP address known, a node exits, ctx ends or clusterReadyTimeout passes; then
// Leader and Followers are set.
func (c *Cluster) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(clusterReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var leader *Server
		var followers []*Server
		for _, n := range c.nodes {
			h, err := readHealth(client, n.URL)
			switch {
			case err != nil:
			case h.Role == "leader":
				leader = n
			case h.Role == "follower" && h.Leader != nil && h.Leader.HTTPAddr != nil:
				followers = append(followers, n)
			}
		}
		if leader != nil && len(followers) == len(c.nodes)-1 {
			c.Leader, c.Followers = leader, followers
			return nil
		}
		for _, n := range c.nodes {
			select {
			case <-n.exited:
				return fmt.Errorf("%s serve (%s) exited before the cluster was ready (%v); its output ends: %s", n.cmd.Path, n.URL, n.exitErr(), n.out)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a cluster leader: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("no node led with every other following within %v; first node's output: %s", clusterReadyTimeout, c.nodes[0].out)
		case <-tick.C:
		}
	}
}

func readHealth(client *http.Client, url string) (nodeHealth, error) {
	resp, err := client.Get(url + "/health")
	if err != nil {
		return nodeHealth{}, err
	}
	defer resp.Body.Close()
	var h nodeHealth
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nodeHealth{}, fmt.Errorf("%s/health: %w", url, err)
	}
	return h, nil
}

// Stop kills every node (SIGKILL) and removes the directories. Not SIGTERM: what the shape
// measures is the push, the data is thrown away, and an orderly stop of a whole cluster is
// not a run's business (the leader hands over, the last flush pass must commit); SIGTERM to
// all three at once left a node of main 715a3df still running 45 s later on this box. A kill
// -9 is what a cluster node must survive anyway.
func (c *Cluster) Stop() { c.stopAll() }

func (c *Cluster) stopAll() {
	defer os.RemoveAll(c.dir)
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Kill()
		}()
	}
	wg.Wait()
}
