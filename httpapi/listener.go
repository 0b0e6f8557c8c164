package httpapi

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Accept back-off: the first retry after a resource-exhaustion error waits acceptBackoffMin,
// each further one twice as long, capped at acceptBackoffMax (the schedule net/http's server
// uses for temporary accept errors). A descriptor freed by a closing connection is taken on the
// next retry, at most acceptBackoffMax later.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// connLogEvery rate-limits the warnings of accept errors and refused connections: a flood
	// of them logs one line per period with the count since the last line.
	connLogEvery = 10 * time.Second
	// maxRefusing bounds the refused connections being answered at once: each holds a
	// descriptor until its client reads the 503 (or refuseTimeout passes). Past it a refused
	// connection is closed without an answer. Part of the descriptor reserve of `comb serve`.
	maxRefusing = 16
	// refuseTimeout bounds the whole exchange with one refused client.
	refuseTimeout = 500 * time.Millisecond
	// refuseDrainBytes bounds what is read (and dropped) from a refused client before closing:
	// closing a socket with unread input sends a reset, which can destroy the 503 in flight.
	refuseDrainBytes = 64 << 10
)

// msgTooManyConns is the body of the 503 a connection past the cap gets. A 5xx is what clients
// retry with back-off (spec 0.2), which is what a full server wants from them.
const msgTooManyConns = "Service unavailable: too many open connections; retry later"

// refusal is the complete HTTP answer to a connection past the cap: JSON error body and CORS
// headers as on every response (spec 0.1), and Connection: close.
var refusal = func() []byte {
	body := `{"error":"` + msgTooManyConns + `"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Server: comb\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Connection: close\r\n" +
		"Retry-After: 1\r\n" +
		"Access-Control-Allow-Origin: *\r\n" +
		"Access-Control-Allow-Methods: GET, POST, PUT, DELETE, OPTIONS\r\n" +
		"Access-Control-Allow-Headers: Content-Type, Authorization\r\n" +
		"Access-Control-Max-Age: 86400\r\n" +
		"\r\n" + body)
}()

// connStats are the connection counters of /metrics/prometheus.
type connStats struct {
	open         atomic.Int64  // connections handed to fasthttp and not closed yet
	refused      atomic.Uint64 // connections past the cap, answered 503 or closed
	acceptErrors atomic.Uint64 // accept failures ridden out (out of descriptors or kernel memory)

	// bare holds the connections handed to fasthttp unwrapped (capListener.bare), each counted
	// in open until fasthttp reports it closed (closed, from Server.connState).
	bare sync.Map // net.Conn → struct{}
}

// closed gives back the slot of a connection Accept handed out bare; other connections
// (counted by their countedConn, or never counted: ServePeer's) are not in bare and change
// nothing. A second call for one connection does nothing.
func (s *connStats) closed(c net.Conn) {
	if _, ok := s.bare.LoadAndDelete(c); ok {
		s.open.Add(-1)
	}
}

// capListener wraps the server's listener (issue 10, "running out of file descriptors"):
//
//   - Accept survives running out of descriptors. fasthttp ends Serve on any accept error that is
//     not a timeout, so an EMFILE under a connection flood used to stop the broker. Here EMFILE,
//     ENFILE, ENOBUFS and ENOMEM are counted, logged (rate-limited) and retried with back-off;
//     the pending connection waits in the kernel's backlog meanwhile.
//   - At most max connections are open at once (max ≤ 0: no cap). One past the cap is accepted
//     and answered 503 with a JSON body, then closed, so that connections and the broker's files
//     together stay under the process's descriptor limit.
//
// fasthttp calls Accept from one goroutine; Close may come from another (Shutdown).
type capListener struct {
	net.Listener
	max      int64
	stats    *connStats
	log      zerolog.Logger
	refusing chan struct{} // semaphore: refusals being answered
	// closeRefused closes a connection past the cap without answering (under TLS, where the
	// plain-text 503 would be garbage to the client).
	closeRefused bool
	// bare hands TCP and Unix connections to fasthttp as they are, not in a countedConn, and
	// counts their close through fasthttp's ConnState hook instead (connStats.closed). fasthttp
	// writes a response longer than its 4 KiB write buffer (a pop or ack of 100 messages, a
	// push answer) with one writev of header and body only on a *net.TCPConn or *net.UnixConn;
	// through a wrapper it copies 4 KiB into the buffer, writes it, and writes the rest: two
	// syscalls and two TCP segments a response. Plain HTTP only: under TLS fasthttp sees the
	// tls.Conn, and the hook could not find the connection to count.
	bare   bool
	closed chan struct{}
	once   sync.Once

	logMu      sync.Mutex
	lastLog    map[string]time.Time // by warning kind
	suppressed map[string]int       // events not logged since lastLog, by kind
}

func newCapListener(ln net.Listener, maxConns int, stats *connStats, log zerolog.Logger) *capListener {
	return &capListener{
		Listener:   ln,
		max:        int64(maxConns),
		stats:      stats,
		log:        log,
		refusing:   make(chan struct{}, maxRefusing),
		closed:     make(chan struct{}),
		lastLog:    map[string]time.Time{},
		suppressed: map[string]int{},
	}
}

// Accept returns the next connection within the cap. It returns an error only when the
// listener is closed or fails for a reason other than resource exhaustion.
func (l *capListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !resourceExhausted(err) {
				return nil, err
			}
			l.stats.acceptErrors.Add(1)
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			l.warn("accept", err, delay)
			l.sleep(delay)
			continue // a closed listener makes the next Accept fail for good
		}
		delay = 0
		if l.max > 0 && l.stats.open.Load() >= l.max {
			l.refuse(c)
			continue
		}
		l.stats.open.Add(1)
		if l.bare && vectored(c) {
			l.stats.bare.Store(c, struct{}{})
			return c, nil
		}
		return &countedConn{Conn: c, open: &l.stats.open}, nil
	}
}

// Close closes the listener and cuts short a back-off in progress.
func (l *capListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func (l *capListener) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.closed:
	}
}

// resourceExhausted reports whether an accept error means "no descriptor or memory right now":
// the listener itself is fine and a retry succeeds once something is freed.
func resourceExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// refuse answers a connection past the cap with the 503 and closes it, off the accept loop.
func (l *capListener) refuse(c net.Conn) {
	l.stats.refused.Add(1)
	l.warn("refuse", nil, 0)
	if l.closeRefused {
		_ = c.Close()
		return
	}
	select {
	case l.refusing <- struct{}{}:
		go func() {
			defer func() { <-l.refusing }()
			answerRefusal(c)
		}()
	default:
		_ = c.Close() // maxRefusing answers in flight already: do not hold another descriptor
	}
}

// answerRefusal writes the 503, half-closes, and reads what the client sent until it closes
// (or refuseTimeout), so the close does not reset the connection before the 503 is read.
func answerRefusal(c net.Conn) {
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(refuseTimeout)); err != nil {
		return
	}
	if _, err := c.Write(refusal); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, refuseDrainBytes))
}

// warn logs one line per connLogEvery and kind ("accept" errors, "refuse"d connections), with
// how many more happened since the previous line.
func (l *capListener) warn(kind string, err error, delay time.Duration) {
	l.logMu.Lock()
	now := time.Now()
	if now.Sub(l.lastLog[kind]) < connLogEvery {
		l.suppressed[kind]++
		l.logMu.Unlock()
		return
	}
	more := l.suppressed[kind]
	l.lastLog[kind], l.suppressed[kind] = now, 0
	l.logMu.Unlock()
	if kind == "accept" {
		l.log.Warn().Err(err).Dur("retry_in", delay).Int("more_since_last_warning", more).
			Msg("cannot accept connections: out of file descriptors or kernel memory; retrying (lower --max-conns or raise ulimit -n)")
		return
	}
	l.log.Warn().Int64("max_conns", l.max).Int("more_since_last_warning", more).
		Msg("connection refused with 503: --max-conns connections already open")
}

// vectored reports whether fasthttp writes to c with writev (its vectorWriter: the two
// concrete socket types of package net).
func vectored(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// countedConn gives its slot back once, on the first Close, just before closing the socket: a
// client that has seen the close can connect again at once without being refused.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// SyscallConn exposes the socket to the long-poll disconnect watch (disconnect.go).
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("httpapi: connection is not a socket")
	}
	return sc.SyscallConn()
}
