//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// health is the part of /health a replicated node adds (docs/replication.md).
type health struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	Role   string `json:"role"`
	Leader *struct {
		ID string `json:"id"`
	} `json:"leader"`
	AppliedLSN uint64            `json:"appliedLSN"`
	Damaged    []json.RawMessage `json:"damaged"` // partitions out of service
}

func (h health) leaderID() string {
	if h.Leader == nil {
		return ""
	}
	return h.Leader.ID
}

// readHealth asks one node, without retry.
func readHealth(ctx context.Context, c *client, n *node, timeout time.Duration) (health, error) {
	st, b, err := c.direct(ctx, n, http.MethodGet, "/health", timeout)
	if err != nil {
		return health{}, err
	}
	var h health
	if err := json.Unmarshal(b, &h); err != nil {
		return health{}, fmt.Errorf("/health %d %q: %w", st, trunc(b), err)
	}
	if st != http.StatusOK && h.Status == "" {
		h.Status = fmt.Sprint(st)
	}
	return h, nil
}

// readUptime is /metrics' uptime in seconds: since this process image started.
func readUptime(ctx context.Context, c *client, n *node, timeout time.Duration) (float64, error) {
	st, b, err := c.direct(ctx, n, http.MethodGet, "/metrics", timeout)
	if err != nil {
		return 0, err
	}
	var m struct {
		Uptime *float64 `json:"uptime"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Uptime == nil {
		return 0, fmt.Errorf("/metrics %d %q: no uptime (%v)", st, trunc(b), err)
	}
	return *m.Uptime, nil
}

// monitor polls every running, unpaused node's /health and checks that appliedLSN never
// decreases within one process (check 4); it notes leader changes and unhealthy answers in
// the timeline.
type monitor struct {
	c     *client
	led   *ledger
	nodes []*node

	mu       sync.Mutex
	last     map[string]sampleAt // node/incarnation → last sample
	leader   string
	unwell   map[string]bool     // node/incarnation/answer noted once
	since    map[string]sampleAt // node/process.image → first sample of a run of answers not "healthy"
	uptime   map[string]float64  // node/process → /metrics uptime of the last sample
	images   map[string]int      // node/process → re-executions seen
	samples  int
	maxLSN   map[string]uint64 // node id → highest appliedLSN seen in any incarnation
	lastRole map[string]string
}

type sampleAt struct {
	at time.Time
	h  health
}

func newMonitor(c *client, led *ledger, nodes []*node) *monitor {
	return &monitor{c: c, led: led, nodes: nodes, last: map[string]sampleAt{}, unwell: map[string]bool{}, since: map[string]sampleAt{}, uptime: map[string]float64{}, images: map[string]int{},
		maxLSN: map[string]uint64{}, lastRole: map[string]string{}}
}

// run polls every 100 ms until ctx ends.
func (m *monitor) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var wg sync.WaitGroup
		for _, n := range m.nodes {
			running, paused, inc := n.state()
			if !running || paused {
				continue
			}
			wg.Add(1)
			go func(n *node, inc int) {
				defer wg.Done()
				// A deposed leader re-executes itself (execve: the same pid, a new image whose
				// appliedLSN starts again): /metrics' uptime read on both sides of /health tells
				// which image answered, and drops an answer that straddles an exec.
				u1, err1 := readUptime(ctx, m.c, n, 400*time.Millisecond)
				h, err := readHealth(ctx, m.c, n, 400*time.Millisecond)
				u2, err2 := readUptime(ctx, m.c, n, 400*time.Millisecond)
				if err != nil || err1 != nil || err2 != nil || u2 < u1 {
					return
				}
				// The process may have been restarted while the answer was on its way.
				if _, _, now := n.state(); now != inc {
					return
				}
				m.sample(n, inc, time.Now(), h, u2)
			}(n, inc)
		}
		wg.Wait()
	}
}

func (m *monitor) sample(n *node, inc int, at time.Time, h health, uptime float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples++
	proc := fmt.Sprintf("%s/%d", n.id, inc)
	if last, ok := m.uptime[proc]; ok && uptime < last {
		m.images[proc]++
		m.led.note("%s (process %d) re-executed itself (image %d, uptime %.1fs)", n.id, inc, m.images[proc]+1, uptime)
	}
	m.uptime[proc] = uptime
	key := fmt.Sprintf("%s/%d.%d", n.id, inc, m.images[proc]+1)
	prev, seen := m.last[key]
	if seen && at.Sub(prev.at) > time.Second {
		delete(m.since, key) // paused in between: a run of unhealthy answers starts again
	}
	if seen && h.AppliedLSN < prev.h.AppliedLSN {
		m.led.violate("4 cursor went back", "node %s (process %d image %d): /health appliedLSN %d at %s after %d at %s (role %s then %s)",
			n.id, inc, m.images[proc]+1, h.AppliedLSN, m.led.rel(at), prev.h.AppliedLSN, m.led.rel(prev.at), prev.h.Role, h.Role)
	}
	m.last[key] = sampleAt{at: at, h: h}
	if h.AppliedLSN > m.maxLSN[n.id] {
		m.maxLSN[n.id] = h.AppliedLSN
	}
	if cut, healed := n.cutState(); cut || at.Sub(healed) < healedRecently {
		// Cut off (or just healed): a node without a leader says so; a run of unhealthy
		// answers starts after the cut (netcut_test.go).
		delete(m.since, key)
	} else {
		m.judgeHealth(n, inc, key, at, h)
	}
	if h.Role == "leader" && m.leader != n.id {
		m.led.note("%s leads (appliedLSN %d)", n.id, h.AppliedLSN)
		m.leader = n.id
	}
	m.lastRole[n.id] = h.Role
}

// unwellFor is how long a node may answer something other than "healthy" before it is a
// finding: a checkpoint may fail for a moment while leadership moves, and retries.
const unwellFor = 5 * time.Second

// judgeHealth notes each distinct unhealthy answer of a process in the timeline, and reports a
// process whose answers stay unhealthy for unwellFor, or that reports damaged partitions.
func (m *monitor) judgeHealth(n *node, inc int, key string, at time.Time, h health) {
	if h.Status == "healthy" {
		delete(m.since, key)
		return
	}
	what := fmt.Sprintf("status %q reason %q, %d damaged partitions", h.Status, h.Reason, len(h.Damaged))
	if !m.unwell[key+"/"+what] {
		m.unwell[key+"/"+what] = true
		m.led.note("%s (process %d, %s) /health %s", n.id, inc, h.Role, what)
		if len(h.Damaged) > 0 {
			m.led.violate("9 node unhealthy", "node %s (process %d, %s) /health at %s: %s %s", n.id, inc, h.Role, m.led.rel(at), what, trunc(joinRaw(h.Damaged)))
		}
	}
	first, ok := m.since[key]
	if !ok {
		m.since[key] = sampleAt{at: at, h: h}
		return
	}
	if at.Sub(first.at) >= unwellFor && !m.unwell[key+"/reported"] {
		m.unwell[key+"/reported"] = true
		m.led.violate("9 node unhealthy", "node/process.image %s: /health not healthy from %s to %s at least: first %s (%s), now %s (%s)", key,
			m.led.rel(first.at), m.led.rel(at), fmt.Sprintf("status %q reason %q", first.h.Status, first.h.Reason), first.h.Role, what, h.Role)
	}
}

// settle waits until every node runs and answers /health, exactly one says leader and the
// others follower naming it; it returns the leader.
func settle(ctx context.Context, c *client, nodes []*node, timeout time.Duration) (*node, error) {
	deadline := time.Now().Add(timeout)
	var last []string
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		last = last[:0]
		var leader *node
		ok := true
		hs := map[string]health{}
		for _, n := range nodes {
			running, paused, inc := n.state()
			if !running || paused {
				ok = false
				last = append(last, fmt.Sprintf("%s: running %v paused %v", n.id, running, paused))
				continue
			}
			h, err := readHealth(ctx, c, n, 500*time.Millisecond)
			if err != nil {
				ok = false
				last = append(last, fmt.Sprintf("%s (process %d): %v", n.id, inc, err))
				continue
			}
			hs[n.id] = h
			last = append(last, fmt.Sprintf("%s (process %d): status %s role %s leader %q appliedLSN %d", n.id, inc, h.Status, h.Role, h.leaderID(), h.AppliedLSN))
			if h.Role == "leader" {
				if leader != nil {
					ok = false
				}
				leader = n
			}
		}
		if ok && leader != nil {
			for id, h := range hs {
				if id != leader.id && (h.Role != "follower" || h.leaderID() != leader.id) {
					ok = false
				}
			}
			if ok {
				return leader, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Strings(last)
	return nil, fmt.Errorf("no settled leader within %v: %s", timeout, strings.Join(last, "; "))
}

// waitApplied waits until every node reports the same appliedLSN twice in a row 300 ms
// apart (the cluster is quiet and every follower applied what the leader did).
func waitApplied(ctx context.Context, c *client, nodes []*node, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	var prev []uint64
	var last string
	for time.Now().Before(deadline) {
		cur := make([]uint64, 0, len(nodes))
		var parts []string
		for _, n := range nodes {
			h, err := readHealth(ctx, c, n, time.Second)
			if err != nil {
				parts = append(parts, fmt.Sprintf("%s: %v", n.id, err))
				cur = nil
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s %d", n.id, h.Role, h.AppliedLSN))
			cur = append(cur, h.AppliedLSN)
		}
		last = strings.Join(parts, ", ")
		same := len(cur) == len(nodes)
		for i := range cur {
			if cur[i] != cur[0] {
				same = false
			}
		}
		if same && prev != nil && prev[0] == cur[0] {
			return cur[0], nil
		}
		prev = nil
		if same {
			prev = cur
		}
		time.Sleep(300 * time.Millisecond)
	}
	return 0, fmt.Errorf("the nodes did not reach the same appliedLSN within %v: %s", timeout, last)
}

func joinRaw(rs []json.RawMessage) []byte {
	var b []byte
	for _, r := range rs {
		b = append(append(b, r...), ' ')
	}
	return b
}
