package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/version"
)

// Defaults of Config's zero values.
const (
	DefaultMaxBodyBytes = 64 << 20 // spec 1.9: a configurable cap, default 64 MiB
	DefaultMaxBatch     = 10000    // spec 11 #54: at least 10 000
	defaultPopTimeout   = 30 * time.Second

	// maxPopTimeout keeps a client's `timeout` from overflowing time.Duration; no client asks
	// for anywhere near a day.
	maxPopTimeout = 24 * time.Hour
)

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// MaxBodyBytes is the request-body cap; larger bodies get 413 {"error":"Payload too large"}.
	MaxBodyBytes int
	// MaxBatch caps a pop's `batch` (spec 3.2).
	MaxBatch int
	// DefaultPopTimeout is a pop's `timeout` when the request gives none. Zero means env
	// DEFAULT_TIMEOUT (ms), else env POP_DEFAULT_TIMEOUT_MS (ms), else 30 s (spec 3.2, 11 #2).
	DefaultPopTimeout time.Duration
	// MaxConns caps the connections open at once; one past it is answered 503 with a JSON
	// body and closed (listener.go). ≤ 0 means no cap: running out of descriptors is then only
	// ridden out by the accept back-off. `comb serve` derives it from RLIMIT_NOFILE.
	MaxConns int
	// Auth authenticates requests (spec 9.1); nil means JWT auth off: every route open and no
	// producerSub stamped.
	Auth *auth.Authenticator
	// TLS, when set, serves HTTPS on the listener (Certificate.TLSConfig); nil serves plain
	// HTTP.
	TLS *tls.Config
	// Static serves the dashboard at `/` and its files (package ui); nil: `/` is 404.
	Static Static
	// Cluster, on a node of a replicated cluster (*replica.Log), makes a node that does not lead
	// forward requests to the leader (forward.go); nil is a single node.
	Cluster Cluster
	// Migration runs imports from a Queen database (/api/v1/migration/*, migration.go); nil
	// answers those routes 501.
	Migration Migrator
	// Version is reported by GET /health; "" means the build's own
	// (package version).
	Version string
	Logger  zerolog.Logger
}

// DefaultPopTimeoutFromEnv resolves the pop timeout default as seed 000 says: DEFAULT_TIMEOUT,
// then POP_DEFAULT_TIMEOUT_MS, then 30000 ms. Unparsable or non-positive values are skipped.
func DefaultPopTimeoutFromEnv() time.Duration {
	for _, name := range []string{"DEFAULT_TIMEOUT", "POP_DEFAULT_TIMEOUT_MS"} {
		if ms, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && ms > 0 {
			return clampTimeout(ms)
		}
	}
	return defaultPopTimeout
}

func clampTimeout(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	if ms > int64(maxPopTimeout/time.Millisecond) {
		return maxPopTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// Server is the HTTP front of one Backend.
type Server struct {
	b     Backend
	rep   Reports // the read-side reports (reports.go)
	cfg   Config
	log   zerolog.Logger
	http  *fasthttp.Server
	start time.Time

	// popCtx is handed to every Backend.Pop; Shutdown cancels it so parked long-polls answer 204
	// instead of holding the shutdown for up to their timeout.
	popCtx    context.Context
	cancelPop context.CancelFunc

	requests atomic.Uint64 // every request served, for GET /metrics
	conns    connStats     // open, refused and accept errors, for /metrics/prometheus

	// Requests per operation as routed, whatever their outcome (400, 500, 204 included), for
	// the *_requests_total families of /metrics/prometheus.
	pushRequests, popRequests, ackRequests atomic.Uint64

	// auth checks tokens (nil or disabled: every route open, no producerSub); the counters are
	// its refusals for /metrics/prometheus.
	auth                                       *auth.Authenticator
	authRefused401, authRefused403, authErrors atomic.Uint64

	// fwd forwards a follower's requests to the leader; nil on a single node.
	fwd *forwarder
	// reads confirms a cluster node's read answers (read_barrier.go); nil on a single node.
	reads ReadBarrier
	// prom is what GET /metrics/prometheus gathers (prometheus.go).
	prom *prometheus.Registry
}

// New returns a Server for the engine b and the reports r read from it (cmd/comb serve passes
// the broker and report.New(b.View())). It does not listen; call Serve or ListenAndServe.
func New(b Backend, r Reports, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.DefaultPopTimeout <= 0 {
		cfg.DefaultPopTimeout = DefaultPopTimeoutFromEnv()
	}
	if cfg.Version == "" {
		cfg.Version = version.Read().Short()
	}
	s := &Server{b: b, rep: r, cfg: cfg, log: cfg.Logger, start: time.Now(), auth: cfg.Auth}
	s.popCtx, s.cancelPop = context.WithCancel(context.Background())
	if cfg.Cluster != nil {
		s.fwd = newForwarder(cfg.Cluster)
	}
	s.reads = readsCluster(b, cfg)
	s.prom = newPromRegistry(s)
	s.http = &fasthttp.Server{
		Handler:            s.Handler,
		ErrorHandler:       s.errorHandler,
		Name:               "comb",
		MaxRequestBodySize: cfg.MaxBodyBytes,
		// Long-polls are parked inside the handler, where fasthttp applies no deadline; the
		// write deadline starts only once the handler returns. So these bound slow clients, not
		// pops, and a pop's `timeout` up to maxPopTimeout is never cut.
		ReadTimeout:  2 * time.Minute,
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  5 * time.Minute,
		// Every client keeps many long-polls open at once (spec 0.1).
		Concurrency:                  1 << 20,
		ReadBufferSize:               16 << 10,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		ConnState:                    s.connState,
		Logger:                       fasthttpLogger{s},
	}
	if s.auth.Enabled() {
		s.http.HeaderReceived = s.headerReceived
	}
	return s
}

// Serve answers requests on ln until Shutdown. It returns nil after a clean Shutdown. Running
// out of file descriptors does not end it (listener.go); Config.MaxConns caps the connections.
func (s *Server) Serve(ln net.Listener) error {
	capped := newCapListener(ln, s.cfg.MaxConns, &s.conns, s.log)
	if s.cfg.TLS == nil {
		capped.bare = true // counted closed by connState
		return s.http.Serve(capped)
	}
	// The cap counts TCP connections under TLS; a refused one is closed without the plain-text
	// 503, which a TLS client could not read (it sees a network error and retries, spec 0.2).
	capped.closeRefused = true
	return s.http.Serve(tls.NewListener(plainHTTPGuard{capped}, s.cfg.TLS))
}

// ServePeer answers the requests other members of a replicated cluster forward to this node
// on ln (*replica.Log's PeerHTTP: connections on the raft port, authenticated by the peer
// handshake, TLS already where the cluster has certificates), until Shutdown, which closes ln
// too. Neither Config.TLS nor the connection cap applies: the members are few and known.
func (s *Server) ServePeer(ln net.Listener) error { return s.http.Serve(ln) }

// ListenAndServe listens on addr (host:port) and serves until Shutdown.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Shutdown stops accepting connections, answers every parked long-poll with 204 (their
// context is cancelled), and waits for in-flight requests until ctx ends. It does not close
// the Backend: the caller does that afterwards, so the answered pops' state reaches the final
// checkpoint.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancelPop()
	return s.http.ShutdownWithContext(ctx)
}

// Handler is the fasthttp entry point: counting, CORS, panic recovery and routing.
func (s *Server) Handler(ctx *fasthttp.RequestCtx) {
	s.requests.Add(1)
	defer s.releaseIfClosing(ctx)
	defer s.recoverPanic(ctx)
	setCORS(ctx)
	s.dispatch(ctx)
}

// recoverPanic turns a panic in a handler into a logged 500 with a JSON body, so no input can
// take the server down (issue 4, "Bad input").
func (s *Server) recoverPanic(ctx *fasthttp.RequestCtx) {
	v := recover()
	if v == nil {
		return
	}
	s.log.Error().
		Str("method", string(ctx.Method())).
		Str("uri", string(ctx.RequestURI())).
		Interface("panic", v).
		Bytes("stack", debug.Stack()).
		Msg("handler panicked; answered 500")
	ctx.Response.Reset()
	setCORS(ctx)
	writeError(ctx, fasthttp.StatusInternalServerError, "Internal server error")
}

// errorHandler answers requests fasthttp could not read: the 413 of the body cap, with the JSON
// body the spec asks for (spec 1.2), and 400/431 for other malformed requests.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	defer s.conns.closed(ctx.Conn()) // fasthttp closes the connection after this answer
	setCORS(ctx)
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		// Over the cap of a request auth refuses (headerReceived): answer the refusal.
		if _, aerr := s.checkHeader(&ctx.Request.Header); aerr != nil {
			s.refuse(ctx, aerr)
			return
		}
		writeError(ctx, fasthttp.StatusRequestEntityTooLarge, "Payload too large")
	case errors.As(err, &small):
		writeError(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "Request headers too large")
	default:
		writeError(ctx, fasthttp.StatusBadRequest, "Malformed HTTP request")
	}
}

// releaseIfClosing gives back the slot of a connection fasthttp closes once this response is
// written (the request asked for Connection: close, is HTTP/1.0 without keep-alive, or the
// response says close), before the response goes out: a client that has read the response
// and seen the close can connect again at once without being refused, as when countedConn
// counted it down before closing. connState, after the close, then finds nothing to count.
func (s *Server) releaseIfClosing(ctx *fasthttp.RequestCtx) {
	if ctx.Request.Header.ConnectionClose() || ctx.Response.Header.ConnectionClose() {
		s.conns.closed(ctx.Conn())
	}
}

// connState is fasthttp's hook on every connection's state changes: a connection that closes
// (or is hijacked, which comb never does) gives its slot under Config.MaxConns back. fasthttp
// calls it right after closing the socket, on the connection's own goroutine.
func (s *Server) connState(c net.Conn, st fasthttp.ConnState) {
	if st == fasthttp.StateClosed || st == fasthttp.StateHijacked {
		s.conns.closed(c)
	}
}

// fasthttpLogger routes fasthttp's own messages (connection errors) into zerolog at debug level.
type fasthttpLogger struct{ s *Server }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.s.log.Debug().Msgf(format, args...)
}
