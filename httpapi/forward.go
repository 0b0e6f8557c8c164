package httpapi

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Followers forward (issue 15, docs/replication.md "Forwarding, not redirect"): on a node of a
// replicated cluster that does not lead, every request but the node's own (/health, /metrics,
// /metrics/prometheus, the dashboard, CORS preflights) is sent to the leader as
// received (method, raw path and query, headers with Authorization, body) and the leader's
// status, headers and body are returned. Queen's Python client does not follow redirects, so
// a 307 is not an option. Auth is checked here first (dispatch), and again by the leader, which
// stamps producerSub from the same token.
//
// The request, with the client's Authorization, travels only over Cluster.DialPeer's channel
// (issue 22): the leader's raft port with mutual TLS against the cluster CA and the cluster-id
// handshake (replica/peer.go), served there by the leader's Server.ServePeer. The HTTP address
// a leader announces through the log is for /health and clients: a follower still waits for
// the announcement at the start of a term (leaderAddrWait), but never sends anything to it.

// Cluster is a replicated node's view of its cluster (*replica.Log). Config.Cluster nil is a
// single node: dispatch pays one nil check.
type Cluster interface {
	// Leading reports whether this node serves writes (the leader, caught up). Asked on every
	// request, so it must not block.
	Leading() bool
	// LeaderHTTP is the leader's node id and the HTTP address it announced; addr is "" while no
	// leader is known or its address has not reached this node.
	LeaderHTTP() (id, addr string)
	// LeaderChanged returns a channel closed at the next change that may alter LeaderHTTP's
	// answer (another leader, an address announced). Take it before asking LeaderHTTP, so a
	// change in between is not missed: a request waiting for a new leader's address waits on
	// it rather than poll.
	LeaderChanged() <-chan struct{}
	// NodeID is this node's id, sent in ForwardedHeader.
	NodeID() string
	// DialPeer opens a connection to member id that carries forwarded HTTP requests to its
	// Server.ServePeer, authenticated as a member of this cluster (*replica.Log: the raft
	// port, mutual TLS). A request and its token go nowhere else.
	DialPeer(ctx context.Context, id string) (net.Conn, error)
}

// ForwardedHeader marks a request a follower forwarded; its value is the follower's node id. A
// node that receives one and does not lead answers 503 rather than forward it again, so two
// nodes that disagree on the leader cannot pass a request back and forth.
const ForwardedHeader = "X-Comb-Forwarded"

const (
	// forwardTimeout bounds a forwarded request that does not long-poll, as the server's own
	// read and write timeouts bound a client's: generous, since a push of --max-body waits
	// for a quorum.
	forwardTimeout = 2 * time.Minute
	// forwardMargin is added to a pop's `timeout`: the leader answers a long-poll when its
	// timeout ends, and the answer still has to travel.
	forwardMargin = 10 * time.Second
	// forwardDialTimeout bounds connecting to the leader: a dead host is a 503 within it.
	forwardDialTimeout = 5 * time.Second
	// leaderAddrWait bounds how long a request waits for the address of a leader this node
	// already knows: a new leader announces it right after its barrier, and followers apply the
	// announcement with the next append or heartbeat that carries its commit (tens of ms), so a
	// client that asks at the start of a term waits that long instead of getting a 503.
	leaderAddrWait = 2 * time.Second
	// forwardMaxConns caps the pooled connections to the leader; a long-poll waits on a
	// connection of its own (longPoll), so these carry only short requests.
	forwardMaxConns = 4096
)

// Forwarding outcomes, the label of comb_http_forwarded_total.
const (
	fwdRelayed     = iota // the leader answered; its answer was returned
	fwdNoLeader           // 503: no leader known, or its address not yet announced
	fwdUnreachable        // 503: the leader refused the connection, reset it, or timed out
	fwdLoop               // 503: a forwarded request reached a node that does not lead
	fwdOutcomes
)

var fwdOutcomeNames = [fwdOutcomes]string{"relayed", "no_leader", "unreachable", "loop"}

// forwarder holds the client to the current leader and the outcome counters.
type forwarder struct {
	cluster  Cluster
	self     string
	addrWait time.Duration // leaderAddrWait; tests shorten it

	mu     sync.Mutex
	leader string               // the leader's node id client talks to
	client *fasthttp.HostClient // reused for every forward to leader

	outcomes [fwdOutcomes]atomic.Uint64
}

func newForwarder(c Cluster) *forwarder {
	return &forwarder{cluster: c, self: c.NodeID(), addrWait: leaderAddrWait}
}

// dial opens a peer connection to leader, within forwardDialTimeout or ctx.
func (f *forwarder) dial(ctx context.Context, leader string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
	defer cancel()
	return f.cluster.DialPeer(ctx, leader)
}

// clientFor returns the pooled client to leader, replacing the one to a previous leader (whose
// idle connections are closed; requests in flight on it finish).
func (f *forwarder) clientFor(leader string) *fasthttp.HostClient {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.client != nil && f.leader == leader {
		return f.client
	}
	if f.client != nil {
		f.client.CloseIdleConnections()
	}
	f.leader = leader
	f.client = &fasthttp.HostClient{
		// Addr names the leader for Dial, which finds its raft port; the channel is TLS
		// already when the cluster has peer certificates, so not IsTLS.
		Addr: leader,
		// Never send a request twice: a pop is a GET but claims messages, and a connection
		// that breaks after the leader read it must not claim them again.
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		MaxConns:                  forwardMaxConns,
		MaxConnWaitTimeout:        forwardDialTimeout,
		Dial:                      func(id string) (net.Conn, error) { return f.dial(context.Background(), id) },
		// The leader's idle timeout is minutes; ours is shorter, so the pool never sends on a
		// connection the leader is closing.
		MaxIdleConnDuration: 10 * time.Second,
		// Forward exactly what the client sent: a percent-encoded '/' stays in its segment
		// (spec 0.3), header names keep their case.
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
	}
	return f.client
}

// nodeLocal reports whether rt is answered by every node itself: its health, its metrics, its
// disk (GET /api/v1/storage), the dashboard's files and CORS preflights. Everything else is the
// leader's to answer.
func (rt *route) nodeLocal() bool {
	switch rt.pattern {
	case "*", "", "/health", "/metrics", "/metrics/prometheus", "/api/v1/storage":
		return true
	}
	return false
}

// forward answers ctx from the leader when this node does not lead; false means serve it here
// (this node leads, or was elected and is catching up: the broker then answers writes 503).
func (s *Server) forward(ctx *fasthttp.RequestCtx, rt *route) bool {
	f := s.fwd
	if f.cluster.Leading() {
		return false
	}
	id, addr := f.cluster.LeaderHTTP()
	if id == f.self {
		return false
	}
	if len(ctx.Request.Header.Peek(ForwardedHeader)) > 0 {
		f.outcomes[fwdLoop].Add(1)
		unavailable(ctx, "Service unavailable: this node does not lead its cluster and does not forward a forwarded request")
		return true
	}
	if id != "" && addr == "" {
		if id, addr = f.awaitLeaderAddr(ctx); id == f.self {
			return false
		}
	}
	if id == "" || addr == "" {
		f.outcomes[fwdNoLeader].Add(1)
		unavailable(ctx, "Service unavailable: no leader is known to this node")
		return true
	}

	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	ctx.Request.CopyTo(req)
	// Forward the path as received: a percent-encoded '/' stays in its segment (spec 0.3).
	// HostClient sets this from its own field; longPoll writes the request itself.
	req.URI().DisablePathNormalizing = true
	req.URI().SetScheme("http") // inside the peer channel
	stripHopHeaders(&req.Header)
	req.Header.Set(ForwardedHeader, f.self)

	var err error
	if timeout, longPoll := s.forwardedPopTimeout(ctx, rt); longPoll {
		pctx, stop := s.watchForwardedClient(ctx)
		err = f.longPoll(pctx, id, req, resp, time.Now().Add(timeout+forwardMargin))
		ended := pctx.Err() != nil // before stop, which ends it too
		stop()
		if err != nil && ended {
			// The client went away (nothing to answer) or the server is shutting down: a
			// parked pop answers 204 then, as it does on the leader.
			noContent(ctx)
			return true
		}
	} else {
		err = f.clientFor(id).DoDeadline(req, resp, time.Now().Add(timeout))
	}
	if err != nil {
		f.outcomes[fwdUnreachable].Add(1)
		s.log.Warn().Err(err).Str("leader", id).Str("path", string(ctx.Path())).Msg("forwarding to the leader failed")
		unavailable(ctx, "Service unavailable: the leader "+id+" did not answer: "+err.Error())
		return true
	}
	f.outcomes[fwdRelayed].Add(1)
	relay(ctx, resp)
	return true
}

// awaitLeaderAddr waits up to addrWait (or until the server shuts down: ctx.Done) for the known
// leader's announced address, waking on Cluster.LeaderChanged, and returns the leader and
// address then (the leader may have changed meanwhile; addr "" if it is still unknown).
func (f *forwarder) awaitLeaderAddr(ctx context.Context) (id, addr string) {
	var timeout *time.Timer
	for {
		changed := f.cluster.LeaderChanged()
		id, addr = f.cluster.LeaderHTTP()
		if id == "" || addr != "" || id == f.self {
			return id, addr
		}
		if timeout == nil {
			timeout = time.NewTimer(f.addrWait)
			defer timeout.Stop()
		}
		select {
		case <-changed:
		case <-timeout.C:
			return f.cluster.LeaderHTTP()
		case <-ctx.Done():
			return f.cluster.LeaderHTTP()
		}
	}
}

// forwardedPopTimeout is how long the leader may take to answer ctx: a pop's `timeout` (or
// the default) when it waits, up to maxPopTimeout; forwardTimeout otherwise.
func (s *Server) forwardedPopTimeout(ctx *fasthttp.RequestCtx, rt *route) (time.Duration, bool) {
	if !strings.HasPrefix(rt.pattern, "/api/v1/pop") {
		return forwardTimeout, false
	}
	q := queryArgs{ctx.QueryArgs()}
	if !q.boolean("wait", false) {
		return forwardTimeout, false
	}
	timeout := s.cfg.DefaultPopTimeout
	if ms := q.integer("timeout", -1); ms >= 0 {
		timeout = clampTimeout(ms)
	}
	return timeout, true
}

// longPoll sends req over a connection of its own and reads the answer, closing the connection
// when ctx ends (the client went away, or this server shuts down). The leader's disconnect
// check then sees its peer gone and ends the parked pop with nothing claimed (spec 3.6); over
// a pooled connection it could not.
func (f *forwarder) longPoll(ctx context.Context, leader string, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	conn, err := f.dial(ctx, leader)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	req.Header.SetConnectionClose()
	w := bufio.NewWriter(conn)
	if err := req.Write(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return resp.Read(bufio.NewReader(conn))
}

// hopHeaders are the headers of one connection (RFC 9110 7.6.1), never forwarded; fasthttp
// writes Content-Length and Transfer-Encoding itself from the body.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHopHeaders(h *fasthttp.RequestHeader) {
	h.ResetConnectionClose()
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// relay copies the leader's answer into ctx: status, headers (the CORS headers already set are
// the leader's too) and body, without copying the body bytes.
func relay(ctx *fasthttp.RequestCtx, resp *fasthttp.Response) {
	ctx.SetStatusCode(resp.StatusCode())
	for k, v := range resp.Header.All() {
		switch {
		case isHopHeader(k), strings.EqualFold(string(k), fasthttp.HeaderContentLength),
			strings.EqualFold(string(k), fasthttp.HeaderServer), strings.EqualFold(string(k), fasthttp.HeaderDate):
			continue
		}
		ctx.Response.Header.SetBytesKV(k, v)
	}
	ctx.Response.SwapBody(resp.SwapBody(nil))
}

func isHopHeader(k []byte) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(string(k), h) {
			return true
		}
	}
	return false
}

// unavailable answers 503 {"error": msg} with Retry-After: 1: the cluster is between leaders or
// the leader is out of reach, and Queen's clients retry 5xx.
func unavailable(ctx *fasthttp.RequestCtx, msg string) {
	ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	writeError(ctx, fasthttp.StatusServiceUnavailable, msg)
}

// forwardedTotals is comb_http_forwarded_total by outcome, in fwdOutcomeNames order.
func (f *forwarder) forwardedTotals() [fwdOutcomes]uint64 {
	var t [fwdOutcomes]uint64
	for i := range t {
		t[i] = f.outcomes[i].Load()
	}
	return t
}
