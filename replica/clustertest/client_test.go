//go:build cluster

package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// client sends a request to a random node and, as Queen's clients do in a failover, sends it
// again to another node after a short backoff when it meets a connection error, a timeout or a
// 5xx. It is safe for concurrent use; each caller passes its own rand.
type client struct {
	nodes []*node
	hc    *http.Client

	mu       sync.Mutex
	statuses map[string]int // "route status" or "route error" → count of attempts
}

func newClient(nodes []*node) *client {
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		MaxConnsPerHost:     64,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	}
	return &client{nodes: nodes, hc: &http.Client{Transport: tr}, statuses: map[string]int{}}
}

// attempt is one try that did not end the call.
type attempt struct {
	node   string
	status int // 0: no answer
	err    string
	sent   time.Time
}

// answer is how a call ended: the answer of the last attempt, which node gave it and when
// that attempt was sent and answered, plus the attempts before it.
type answer struct {
	status     int
	body       []byte
	node       string
	sent, recv time.Time
	firstSent  time.Time
	failed     []attempt
	// uncertain: an earlier attempt may have been applied (a timeout, a cut connection, or a
	// 5xx other than a follower's refusal), so the final answer may describe a second try of
	// something already done.
	uncertain bool
}

// notApplied are the 503 bodies of a request refused before anything was done: a node that
// does not lead and does not forward, a follower that knows no leader to forward to, a full
// connection table. Every other 5xx (the leader did not answer a forward, leadership lost
// while answering, shutting down) may come after the request took effect.
var notApplied = [][]byte{[]byte("this node does not lead"), []byte("no leader is known"), []byte("too many open connections")}

func refusedUntouched(st int, body []byte) bool {
	if st != http.StatusServiceUnavailable {
		return false
	}
	for _, p := range notApplied {
		if bytes.Contains(body, p) {
			return true
		}
	}
	return false
}

// call sends body (nil for none) with method to path, each attempt bounded by perTry, until an
// answer below 500 arrives or ctx ends (then the error is ctx's and ans holds the attempts).
func (c *client) call(ctx context.Context, rng *rand.Rand, route, method, path string, body []byte, perTry time.Duration) (answer, error) {
	var ans answer
	last := -1
	for try := 0; ; try++ {
		if err := ctx.Err(); err != nil {
			return ans, err
		}
		i := rng.IntN(len(c.nodes))
		if i == last && len(c.nodes) > 1 {
			i = (i + 1 + rng.IntN(len(c.nodes)-1)) % len(c.nodes)
		}
		last = i
		n := c.nodes[i]
		sent := time.Now()
		if ans.firstSent.IsZero() {
			ans.firstSent = sent
		}
		st, b, err := c.once(ctx, n, method, path, body, perTry)
		if err == nil && st < 500 {
			c.count(route, fmt.Sprint(st))
			ans.status, ans.body, ans.node, ans.sent, ans.recv = st, b, n.id, sent, time.Now()
			return ans, nil
		}
		a := attempt{node: n.id, status: st, sent: sent}
		if err != nil {
			a.err = err.Error()
			c.count(route, "error")
			if !errors.Is(err, syscall.ECONNREFUSED) {
				ans.uncertain = true
			}
		} else {
			a.err = trunc(b)
			c.count(route, fmt.Sprint(st))
			if !refusedUntouched(st, b) {
				ans.uncertain = true
			}
		}
		if ctx.Err() != nil {
			return ans, ctx.Err()
		}
		ans.failed = append(ans.failed, a)
		backoff(ctx, time.Duration(min(25<<min(try, 4), 400))*time.Millisecond+time.Duration(rng.IntN(20))*time.Millisecond)
	}
}

// once is one attempt against one node.
func (c *client) once(ctx context.Context, n *node, method, path string, body []byte, perTry time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, perTry)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.url()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// direct sends one request to one node, no retry (the monitor and the replica check).
func (c *client) direct(ctx context.Context, n *node, method, path string, timeout time.Duration) (int, []byte, error) {
	return c.once(ctx, n, method, path, nil, timeout)
}

func (c *client) count(route, what string) {
	c.mu.Lock()
	c.statuses[route+" "+what]++
	c.mu.Unlock()
}

// statusLines is the attempts' outcomes per route, sorted.
func (c *client) statusLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.statuses))
	for k, v := range c.statuses {
		out = append(out, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(out)
	return out
}

func backoff(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func trunc(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
