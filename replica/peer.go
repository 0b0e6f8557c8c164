package replica

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The peer layer (issue 22): every connection between members, raft's RPCs and the requests
// followers forward to the leader alike, goes through the raft port with mutual TLS (the
// cluster CA's certificates on both sides, peer_tls.go) and the handshake of peer_hello.go.
// A connection whose TLS handshake fails (no client certificate, one of another CA, not TLS
// at all) or whose hello is refused is closed before raft or HTTP reads a byte of it.
// Without TLS (comb serve --peer-insecure) the handshake still runs over plain TCP, so the
// cluster id is checked either way; only the authentication is missing.
//
// hashicorp/raft's NetworkTransport takes it as its StreamLayer: Accept hands raft only the
// connections whose hello asked for raft; those that carry forwarded HTTP go to httpLn, which
// the HTTP server serves (httpapi Server.ServePeer).

// peerHandshakeTimeout bounds an incoming connection's TLS handshake and hello, so a stranger
// that connects and sends nothing holds a goroutine and a descriptor this long at most.
const peerHandshakeTimeout = 10 * time.Second

// refusalLogEvery rate-limits the log line of refused connections, per remote host.
const refusalLogEvery = 10 * time.Second

// peerLayer is raft's StreamLayer and the forwarded-HTTP listener.
type peerLayer struct {
	ln        net.Listener
	advertise string      // the raft address members dial (Config.RaftAddr)
	tls       *tls.Config // nil = plain TCP (--peer-insecure)
	self      string
	ident     *identity
	logger    hclog.Logger

	raftConns chan net.Conn
	httpLn    *peerListener
	done      chan struct{}
	closeOnce sync.Once

	refusals refusalLog
}

// listenPeers binds addr and starts accepting.
func listenPeers(addr string, tlsConf *tls.Config, self string, ident *identity, logger hclog.Logger) (*peerLayer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &peerLayer{ln: ln, advertise: addr, tls: tlsConf, self: self, ident: ident, logger: logger,
		raftConns: make(chan net.Conn), done: make(chan struct{})}
	p.httpLn = &peerListener{p: p, conns: make(chan net.Conn), done: make(chan struct{})}
	p.refusals.logger = logger
	go p.acceptLoop()
	return p, nil
}

// acceptLoop accepts TCP connections and handshakes each on a goroutine of its own, so a
// stranger that stalls its handshake delays no member.
func (p *peerLayer) acceptLoop() {
	var delay time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			// Out of descriptors and the like: back off as net/http does, keep serving.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			p.logger.Warn("accepting a peer connection failed", "error", err)
			select {
			case <-time.After(delay):
			case <-p.done:
				return
			}
			continue
		}
		delay = 0
		go p.handshake(c)
	}
}

// handshake admits or refuses one incoming connection, then hands it to raft or the HTTP
// server, or closes it.
func (p *peerLayer) handshake(c net.Conn) {
	remote := c.RemoteAddr().String()
	if err := c.SetDeadline(time.Now().Add(peerHandshakeTimeout)); err != nil {
		c.Close()
		return
	}
	conn := c
	if p.tls != nil {
		tc := tls.Server(c, p.tls)
		if err := tc.Handshake(); err != nil {
			// No client certificate, one of another CA, or not TLS: nothing was read as an RPC.
			p.refusals.note(remote, fmt.Errorf("TLS handshake: %w", err))
			c.Close()
			return
		}
		conn = tc
	}
	h, err := readHello(conn)
	if err != nil {
		p.refusals.note(remote, fmt.Errorf("peer handshake: %w", err))
		conn.Close()
		return
	}
	local := p.localHello(h.purpose)
	adopt, verr := admit(local, h)
	if _, err := conn.Write(append(encodeHello(local), encodeVerdict(verdictOf(verr), errText(verr))...)); err != nil || verr != nil {
		if verr != nil {
			p.refusals.note(remote, verr)
		}
		conn.Close()
		return
	}
	if adopt {
		if err := p.adopt(h); err != nil {
			p.refusals.note(remote, err)
			conn.Close()
			return
		}
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return
	}
	switch h.purpose {
	case purposeRaft:
		p.deliver(p.raftConns, conn)
	case purposeHTTP:
		p.deliver(p.httpLn.conns, conn)
	default: // purposePing: the answer was all it asked for
		conn.Close()
	}
}

// deliver hands conn to whoever accepts on ch, or closes it once the layer or that listener
// closed.
func (p *peerLayer) deliver(ch chan net.Conn, conn net.Conn) {
	var closed chan struct{}
	if ch == p.httpLn.conns {
		closed = p.httpLn.done
	}
	select {
	case ch <- conn:
	case <-p.done:
		conn.Close()
	case <-closed:
		conn.Close()
	}
}

func (p *peerLayer) localHello(purpose byte) hello {
	c := p.ident.get()
	if c.id != "" {
		return hello{purpose: purpose, node: p.self, cluster: c.id, hash: c.hash}
	}
	return hello{purpose: purpose, node: p.self, hash: p.ident.boot, join: p.ident.join}
}

// adopt takes the peer's cluster id (admit said this node has none and the peer is of the
// cluster it was started for).
func (p *peerLayer) adopt(h hello) error {
	done, err := p.ident.adopt(clusterIDCommand{id: h.cluster, hash: h.hash})
	if done {
		p.logger.Info("this node's cluster id, from a member", "cluster_id", h.cluster, "member", h.node)
	}
	return err
}

// dial connects to the member at addr for purpose: TCP, TLS (the member's certificate
// verified against the cluster CA for addr's host, this node's presented), and the handshake.
// ctx bounds all of it.
//
// Errors: the network's and TLS's; ErrForeignCluster or ErrInitialClusterMismatch (wrapped,
// with the peer's message) when either side refuses; ErrBadHello for an answer that is not a
// comb peer's.
func (p *peerLayer) dial(ctx context.Context, addr string, purpose byte) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		if err := c.SetDeadline(deadline); err != nil {
			c.Close()
			return nil, err
		}
	}
	conn := c
	if p.tls != nil {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		cfg := p.tls.Clone()
		cfg.ServerName = host
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("replica: TLS with the member at %s: %w", addr, err)
		}
		conn = tc
	}
	local := p.localHello(purpose)
	if _, err := conn.Write(encodeHello(local)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("replica: handshake with %s: %w", addr, err)
	}
	remote, err := readHello(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("replica: handshake with %s: %w", addr, err)
	}
	v, msg, err := readVerdict(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("replica: handshake with %s: %w", addr, err)
	}
	if v != verdictAdmit {
		conn.Close()
		return nil, fmt.Errorf("%w: %s (%s) refused this node: %s", verdictErr(v), remote.node, addr, msg)
	}
	adopt, err := admit(local, remote)
	if err == nil && adopt {
		err = p.adopt(remote)
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("replica: %s (%s): %w", remote.node, addr, err)
	}
	return conn, nil
}

// Dial is raft's: a connection for its RPCs.
func (p *peerLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.dial(ctx, string(address), purposeRaft)
}

// Accept is raft's: the next admitted connection that carries its RPCs.
func (p *peerLayer) Accept() (net.Conn, error) {
	select {
	case c := <-p.raftConns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting (raft's transport calls it on Close) and closes the HTTP listener.
func (p *peerLayer) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.ln.Close()
		p.httpLn.Close()
	})
	return err
}

// Addr is the raft address the members dial, as configured (raft compares it with the
// configuration's).
func (p *peerLayer) Addr() net.Addr { return peerAddr(p.advertise) }

type peerAddr string

func (a peerAddr) Network() string { return "tcp" }
func (a peerAddr) String() string  { return string(a) }

// peerListener is the listener of the connections that carry forwarded HTTP requests.
type peerListener struct {
	p         *peerLayer
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func (l *peerListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops handing over connections (the HTTP server's Shutdown calls it); raft's keep
// coming.
func (l *peerListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

func (l *peerListener) Addr() net.Addr { return l.p.Addr() }

// refusalLog logs refused connections at most once per refusalLogEvery per remote host, with
// the number refused since the last line: a stranger knocking in a loop must not flood the
// log.
type refusalLog struct {
	logger hclog.Logger
	mu     sync.Mutex
	hosts  map[string]*refusals
	total  uint64
}

type refusals struct {
	last  time.Time
	since int
}

// maxRefusalHosts bounds the map; past it, it starts over.
const maxRefusalHosts = 1024

func (r *refusalLog) note(remote string, reason error) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	r.mu.Lock()
	r.total++
	if r.hosts == nil || len(r.hosts) >= maxRefusalHosts {
		r.hosts = map[string]*refusals{}
	}
	e := r.hosts[host]
	if e == nil {
		e = &refusals{}
		r.hosts[host] = e
	}
	e.since++
	now := time.Now()
	if now.Sub(e.last) < refusalLogEvery {
		r.mu.Unlock()
		return
	}
	n := e.since
	e.last, e.since = now, 0
	r.mu.Unlock()
	r.logger.Warn("refused a connection to the raft port", "remote", remote, "refused_since_last_line", n, "reason", reason.Error())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var _ raft.StreamLayer = (*peerLayer)(nil)
