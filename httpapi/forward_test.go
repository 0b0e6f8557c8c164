package httpapi

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/broker"
)

// fakeCluster is a node's view of its cluster, set by the test. Its peer channel is plain
// TCP to peer, or to the announced addr when peer is "" (replica's, with TLS, is tested in
// package replica).
type fakeCluster struct {
	mu       sync.Mutex
	self     string
	leading  bool
	id, addr string
	peer     string
	dials    int // DialPeer calls
	// news is closed by setLeader (LeaderChanged); watching, when not nil, hears of each
	// LeaderChanged call, so a test knows a request waits for news.
	news     chan struct{}
	watching chan struct{}
}

func (c *fakeCluster) DialPeer(ctx context.Context, id string) (net.Conn, error) {
	c.mu.Lock()
	c.dials++
	addr := c.peer
	if addr == "" {
		addr = c.addr
	}
	known := id == c.id
	c.mu.Unlock()
	if !known {
		return nil, fmt.Errorf("fake cluster: no member %s", id)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

func (c *fakeCluster) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading
}

func (c *fakeCluster) LeaderHTTP() (string, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id, c.addr
}

func (c *fakeCluster) NodeID() string { return c.self }

func (c *fakeCluster) LeaderChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.news == nil {
		c.news = make(chan struct{})
	}
	if c.watching != nil {
		select {
		case c.watching <- struct{}{}:
		default:
		}
	}
	return c.news
}

// setLeader changes what LeaderHTTP answers and closes the channel LeaderChanged handed out.
func (c *fakeCluster) setLeader(id, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id, c.addr = id, addr
	if c.news != nil {
		close(c.news)
		c.news = nil
	}
}

// seenRequest is what the stand-in leader received.
type seenRequest struct {
	method, uri, body string
	header            map[string]string
}

// fakeLeader is a plain fasthttp server on loopback that records every request and answers
// with answer (the default: 201, a custom header and a JSON body).
type fakeLeader struct {
	addr   string
	mu     sync.Mutex
	seen   []seenRequest
	answer func(ctx *fasthttp.RequestCtx)
}

func startFakeLeader(t *testing.T) *fakeLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &fakeLeader{addr: ln.Addr().String()}
	srv := &fasthttp.Server{
		DisableHeaderNamesNormalizing: true,
		Handler: func(ctx *fasthttp.RequestCtx) {
			r := seenRequest{method: string(ctx.Method()), uri: string(ctx.RequestURI()), body: string(ctx.PostBody()), header: map[string]string{}}
			for k, v := range ctx.Request.Header.All() {
				r.header[string(k)] = string(v)
			}
			l.mu.Lock()
			l.seen = append(l.seen, r)
			answer := l.answer
			l.mu.Unlock()
			if answer != nil {
				answer(ctx)
				return
			}
			ctx.SetStatusCode(201)
			ctx.Response.Header.Set("X-Leader", "n1")
			ctx.Response.Header.SetContentType("application/json")
			ctx.SetBodyString(`[{"status":"queued"}]`)
		},
	}
	go srv.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { _ = srv.Shutdown() })
	return l
}

func (l *fakeLeader) setAnswer(fn func(ctx *fasthttp.RequestCtx)) {
	l.mu.Lock()
	l.answer = fn
	l.mu.Unlock()
}

func (l *fakeLeader) requests() []seenRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seenRequest(nil), l.seen...)
}

// issue 22: a client's request and token travel only over the cluster's peer channel
// (Cluster.DialPeer: the leader's raft port, mutual TLS), never to the HTTP address announced
// through the log. On main d4c9801 a forged announcement pointed a follower at a stranger's
// server, which got the client's Authorization header and answered in the leader's name.
func TestForwardingSendsNothingToTheAnnouncedAddress(t *testing.T) {
	leader, stranger := startFakeLeader(t), startFakeLeader(t)
	cluster := &fakeCluster{self: "n2", id: "n1", addr: stranger.addr, peer: leader.addr}
	ts := startServer(t, newFake(), Config{Cluster: cluster})
	r := ts.doRaw("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`,
		map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"})
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.doRaw("GET", "/api/v1/pop/queue/q?wait=true&timeout=10", "", map[string]string{"Authorization": "Bearer tok"})
	require.Equal(t, 201, r.status, "a long-poll goes over a peer connection of its own")
	require.Len(t, leader.requests(), 2)
	require.Equal(t, "Bearer tok", leader.requests()[0].header["Authorization"])
	require.Empty(t, stranger.requests(), "the announced address got nothing")
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	require.Equal(t, 2, cluster.dials)
}

// issue 15 (docs/replication.md "Forwarding, not redirect"): a follower sends a request to the
// leader with its method, raw path and query, headers (Authorization included) and body,
// marked with X-Comb-Forwarded, and answers with the leader's status, headers and body; its own
// broker sees nothing.
func TestFollowerForwardsTheRequestAndRelaysTheAnswer(t *testing.T) {
	leader := startFakeLeader(t)
	fake := newFake()
	ts := startServer(t, fake, Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})

	r := ts.doRaw("POST", "/api/v1/push?x=1&y=%2F", `{"items":[{"queue":"q"}]}`,
		map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json", "X-Custom": "kept"})
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Equal(t, `[{"status":"queued"}]`, string(r.body))
	require.Equal(t, "n1", r.header.Get("X-Leader"))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))

	seen := leader.requests()
	require.Len(t, seen, 1)
	got := seen[0]
	require.Equal(t, "POST", got.method)
	require.Equal(t, "/api/v1/push?x=1&y=%2F", got.uri)
	require.Equal(t, `{"items":[{"queue":"q"}]}`, got.body)
	require.Equal(t, "Bearer tok", got.header["Authorization"])
	require.Equal(t, "kept", got.header["X-Custom"])
	require.Equal(t, "n2", got.header[ForwardedHeader])
	require.NotContains(t, got.header, "Connection", "the client's Connection: close is its own hop")
	require.Empty(t, fake.callList(), "the follower's broker is not asked")

	// A percent-encoded '/' stays inside its path segment (spec 0.3).
	r = ts.do("GET", "/api/v1/pop/queue/a%2Fb/partition/p%20q?consumerGroup=g", "")
	require.Equal(t, 201, r.status)
	require.Equal(t, "/api/v1/pop/queue/a%2Fb/partition/p%20q?consumerGroup=g", leader.requests()[1].uri)

	// The node's own routes are its own.
	require.Equal(t, 200, ts.do("GET", "/health", "").status)
	require.Equal(t, 200, ts.do("GET", "/metrics", "").status)
	require.Equal(t, 200, ts.do("GET", "/metrics/prometheus", "").status)
	require.Equal(t, 204, ts.do("OPTIONS", "/api/v1/push", "").status)
	require.Len(t, leader.requests(), 2)
}

// The leader's bodiless 204 (an empty pop) reaches the client as the leader sent it: no body,
// no Content-Length (seed 000); an error status and its body pass unchanged.
func TestFollowerRelaysA204AndErrors(t *testing.T) {
	leader := startFakeLeader(t)
	ts := startServer(t, newFake(), Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})
	leader.setAnswer(func(ctx *fasthttp.RequestCtx) { noContent(ctx) })
	r := ts.do("GET", "/api/v1/pop/queue/q?consumerGroup=g", "")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.body)
	require.NotContains(t, string(r.raw), "Content-Length")

	leader.setAnswer(func(ctx *fasthttp.RequestCtx) { badRequest(ctx, "Queue name is required") })
	requireJSON(t, ts.do("POST", "/api/v1/ack", `{}`), 400, `{"error":"Queue name is required"}`)
}

// The 503s a client may see from a cluster, each with Retry-After: 1 and a JSON error: a
// forwarded request that reached a node that does not lead (never forwarded twice), no leader
// known or its address not yet announced, and a leader that refuses the connection.
func TestForwardingRefusals(t *testing.T) {
	leader := startFakeLeader(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	cases := []struct {
		name     string
		id, addr string
		header   map[string]string
		msg      string
	}{
		{"a forwarded request is not forwarded again", "n1", leader.addr, map[string]string{ForwardedHeader: "n3"},
			"Service unavailable: this node does not lead its cluster and does not forward a forwarded request"},
		{"no leader known", "", "", nil, "Service unavailable: no leader is known to this node"},
		{"the leader's address not announced in time", "n1", "", nil, "Service unavailable: no leader is known to this node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			ts := startServer(t, fake, Config{Cluster: &fakeCluster{self: "n2", id: c.id, addr: c.addr}})
			ts.srv.fwd.addrWait = 20 * time.Millisecond
			r := ts.doRaw("POST", "/api/v1/push", `{"items":[]}`, c.header)
			requireJSON(t, r, 503, `{"error":`+quote(c.msg)+`}`)
			require.Equal(t, "1", r.header.Get("Retry-After"))
			require.Empty(t, fake.callList())
		})
	}
	require.Empty(t, leader.requests())

	t.Run("the leader refuses the connection", func(t *testing.T) {
		ts := startServer(t, newFake(), Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: deadAddr}})
		r := ts.do("POST", "/api/v1/push", `{"items":[]}`)
		require.Equal(t, 503, r.status)
		require.Equal(t, "1", r.header.Get("Retry-After"))
		require.True(t, strings.HasPrefix(r.json(t).(map[string]any)["error"].(string), "Service unavailable: the leader n1 did not answer: "), "%s", r.body)

		body := string(ts.do("GET", "/metrics/prometheus", "").body)
		require.Contains(t, body, "comb_http_forwarded_total{outcome=\"unreachable\"} 1\n")
		require.Contains(t, body, "comb_http_forwarded_total{outcome=\"relayed\"} 0\n")
	})
}

// At the start of a term followers know the new leader before its announcement reaches them: a
// request then waits for the address rather than fail, and is sent the moment the address is
// known (Cluster.LeaderChanged), not at a polling tick nor at the end of its wait (a minute
// here, far longer than the test's give-up).
func TestForwardWaitsForANewLeadersAddress(t *testing.T) {
	leader := startFakeLeader(t)
	cluster := &fakeCluster{self: "n2", id: "n1", watching: make(chan struct{}, 1)}
	ts := startServer(t, newFake(), Config{Cluster: cluster})
	ts.srv.fwd.addrWait = time.Minute
	answered := make(chan response, 1)
	go func() { answered <- ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`) }()
	select {
	case <-cluster.watching:
	case <-time.After(30 * time.Second):
		t.Fatal("the request did not wait for news of the leader")
	}
	cluster.setLeader("n1", leader.addr)
	select {
	case r := <-answered:
		require.Equal(t, 201, r.status, "%s", r.body)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting request was not woken when the leader's address became known")
	}
	require.Len(t, leader.requests(), 1)
}

// The leader, and a node elected but still catching up (the leader is itself), serve requests
// themselves: the broker answers (a write there is ErrNotLeader: 503 with Retry-After).
func TestLeaderServesItself(t *testing.T) {
	for _, c := range []*fakeCluster{{self: "n1", leading: true, id: "n1", addr: "127.0.0.1:1"}, {self: "n1", id: "n1", addr: "127.0.0.1:1"}} {
		fake := newFake()
		fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) { return nil, broker.ErrNotLeader }
		ts := startServer(t, fake, Config{Cluster: c})
		r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`)
		requireJSON(t, r, 503, `{"error":"Service unavailable: this node does not lead its cluster"}`)
		require.Equal(t, "1", r.header.Get("Retry-After"))
		require.Equal(t, []string{"Push"}, fake.callList())
	}
}

// Spec 3.6 across a forward: a long-poll forwarded to the leader runs on a connection of its
// own, which the follower closes when its client goes away, so the leader's parked pop is
// cancelled and claims nothing.
func TestClientLeavingAForwardedLongPollCancelsItOnTheLeader(t *testing.T) {
	cancelled := make(chan struct{})
	parked := make(chan struct{})
	lfake := newFake()
	lfake.onPop = func(ctx context.Context, req broker.PopRequest) (broker.PopResult, error) {
		close(parked)
		<-ctx.Done()
		close(cancelled)
		return broker.PopResult{}, nil
	}
	leader := startServer(t, lfake, Config{})
	follower := startServer(t, newFake(), Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})

	conn, err := net.Dial("tcp", follower.addr)
	require.NoError(t, err)
	_, err = conn.Write([]byte("GET /api/v1/pop/queue/q/partition/a%2Fb?consumerGroup=g&wait=true&timeout=60000 HTTP/1.1\r\nHost: t\r\n\r\n"))
	require.NoError(t, err)
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the pop did not reach the leader")
	}
	lfake.mu.Lock()
	require.Equal(t, int64(60000), lfake.popReq.Timeout.Milliseconds(), "the query reached the leader")
	require.Equal(t, "a/b", lfake.popReq.Partition, "a percent-encoded '/' stayed in its segment")
	lfake.mu.Unlock()
	require.NoError(t, conn.Close())
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's pop was not cancelled when the client left the follower")
	}
}

// A forwarded long-poll returns the leader's answer when it comes, after the pooled client's
// short-request deadline would have allowed (its deadline is the pop's timeout plus a margin).
func TestForwardedLongPollReturnsTheLeadersAnswer(t *testing.T) {
	lfake := newFake()
	lfake.onPop = func(ctx context.Context, req broker.PopRequest) (broker.PopResult, error) {
		return broker.PopResult{}, nil // nothing: 204
	}
	leader := startServer(t, lfake, Config{})
	follower := startServer(t, newFake(), Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})
	r := follower.do("GET", "/api/v1/pop/queue/q?consumerGroup=g&wait=true&timeout=100", "")
	require.Equal(t, 204, r.status)
	require.NotContains(t, string(r.raw), "Content-Length")
}

// With JWT auth on, a follower refuses a bad token itself (never forwarded), and a good one
// reaches the leader, which stamps producerSub from it (spec 9.1, 1.5).
func TestForwardingWithAuth(t *testing.T) {
	a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: testSecret}, zerolog.Nop())
	require.NoError(t, err)
	lfake := newFake()
	leader := startServer(t, lfake, Config{Auth: a})
	follower := startServer(t, newFake(), Config{Auth: a, Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})

	body := `{"items":[{"queue":"q","payload":1}]}`
	r := follower.doRaw("POST", "/api/v1/push", body, bearer("not-a-token"))
	require.Equal(t, 401, r.status)
	require.Empty(t, lfake.callList(), "refused on the follower")

	tok := hsToken(t, testSecret, jwt.MapClaims{"sub": "alice", "role": "read-write", "exp": time.Now().Add(time.Hour).Unix()})
	r = follower.doRaw("POST", "/api/v1/push", body, bearer(tok))
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Len(t, lfake.pushed, 1)
	require.Equal(t, "alice", lfake.pushed[0].ProducerSub)
}
