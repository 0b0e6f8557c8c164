package httpapi

import (
	"context"
	"crypto/tls"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// watchForwardedClient is watchDisconnect for a long-poll this follower forwards: it notices
// the client leave at once, rather than within disconnectPollInterval, and ends the returned
// context, which closes the connection to the leader (forwarder.longPoll).
//
// Why at once: the leader's broker looks at the connection it serves right before it claims
// after a wake-up (broker.WithAliveCheck), and for a forwarded pop that connection is this
// follower's. With a timed poll (150 ms then), a message pushed in the gap between the client leaving and
// the follower's next look was claimed by a pop nobody waited for any more, and stayed leased
// (spec 3.6: "nothing may stay claimed"; TestLongPollOfADisconnectedClientIsCancelledAndClaimsNothing
// against a follower, COMB_TEST_TARGET=follower).
//
// How: a goroutine parks in the runtime's netpoller on the client's socket (no thread, no
// timer) and, at every readiness, checks whether the peer has shut its side (peerShutDown,
// POLLRDHUP: pipelined bytes left for fasthttp do not count). stop wakes it with a read
// deadline in the past, waits for it, and clears the deadline before fasthttp reads the
// connection again (it sets its own deadline per request). Connections that are not sockets
// fall back to watchDisconnect.
func (s *Server) watchForwardedClient(ctx *fasthttp.RequestCtx) (context.Context, func()) {
	conn := ctx.Conn()
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn() // HTTPS: watch the TCP socket under the TLS session
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return s.watchDisconnect(ctx)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return s.watchDisconnect(ctx)
	}
	pctx, cancel := context.WithCancel(s.popCtx)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		// The error is the deadline stop sets, or the connection failing: either way the
		// watch is over.
		_ = rc.Read(func(fd uintptr) bool {
			select {
			case <-done:
				return true
			default:
			}
			if peerShutDown(int(fd)) {
				cancel()
				return true
			}
			return false // park until the socket is readable again (bytes, FIN) or the deadline
		})
	}()
	stop := func() {
		close(done)
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-exited
		_ = conn.SetReadDeadline(time.Time{})
		cancel()
	}
	return pctx, stop
}
