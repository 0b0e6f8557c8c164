package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/broker"
)

// disconnectPollInterval is how often a long-poll that is still running looks at its
// connection. fasthttp reads nothing from a connection while its handler runs and gives no
// disconnect signal, so the handler watches for itself. The tick only frees a departed
// client's parked pop early: what spec 3.6 forbids (a claim for it) is prevented by the peek
// right before every claim (alive, via broker.WithAliveCheck), so the tick can be slow. At
// 150 ms the ticks of 200 parked pops were ~1,300 peeks a second, ~4 % of the server's CPU in
// the long-poll bench shape (issue 23, docs/benchmarks.md).
const disconnectPollInterval = time.Second

// disconnectWatch ends a long-poll whose client went away (spec 3.6: "A client disconnect
// cancels the parked pop; nothing may stay claimed"). It costs nothing until the pop has run
// for disconnectPollInterval: then a timer (no goroutine of its own between firings) peeks the
// socket every interval and cancels the pop's context once the peer has closed. The broker
// also calls alive right before it claims after a wake-up, which closes the window between
// the last tick and the claim.
type disconnectWatch struct {
	rc     syscall.RawConn
	cancel context.CancelFunc
	// mu orders the assignment of timer before tick's first read of it: the timer's goroutine
	// has no happens-before edge with the code that started the timer (the race detector
	// reports it, with a long-poll forwarded by a follower).
	mu    sync.Mutex
	timer *time.Timer
	done  chan struct{}
}

// watchDisconnect returns the context to hand to Backend.Pop for a long-poll on ctx's
// connection, and a stop function to call when the pop returns. Connections that are not
// sockets (in-memory listeners in tests) are not watched.
func (s *Server) watchDisconnect(ctx *fasthttp.RequestCtx) (context.Context, func()) {
	conn := ctx.Conn()
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn() // HTTPS: watch the TCP socket under the TLS session
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return s.popCtx, func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return s.popCtx, func() {}
	}
	pctx, cancel := context.WithCancel(s.popCtx)
	w := &disconnectWatch{rc: rc, cancel: cancel, done: make(chan struct{})}
	w.mu.Lock()
	w.timer = time.AfterFunc(disconnectPollInterval, w.tick)
	w.mu.Unlock()
	return broker.WithAliveCheck(pctx, w.alive), w.stop
}

func (w *disconnectWatch) tick() {
	select {
	case <-w.done:
		return
	default:
	}
	if !w.alive() {
		w.cancel()
		return
	}
	w.mu.Lock()
	w.timer.Reset(disconnectPollInterval)
	w.mu.Unlock()
}

// alive peeks at the socket without consuming a byte: EOF (0 bytes, no error) or a reset means
// the peer is gone; "would block" or pending bytes (a pipelined request, left for fasthttp)
// mean it is still there.
func (w *disconnectWatch) alive() bool {
	select {
	case <-w.done:
		return true // the request is over: its connection is fasthttp's again
	default:
	}
	return peerConnected(w.rc)
}

func (w *disconnectWatch) stop() {
	close(w.done)
	w.timer.Stop()
	w.cancel()
}

// peerShutDown reports whether the peer has closed its side (FIN received, POLLRDHUP) or the
// socket failed, whatever unread bytes are still queued.
func peerShutDown(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	}
}

func peerConnected(rc syscall.RawConn) bool {
	connected := true
	var buf [1]byte
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.EAGAIN):
				// Nothing to read: the peer is still there.
			case err != nil:
				connected = false // ECONNRESET and the like
			case n == 0:
				connected = false // orderly close by the peer
			default:
				// Bytes are pending: a pipelined request, or (HTTPS) a TLS close_notify alert
				// followed by the peer's FIN. The FIN is what tells them apart.
				connected = !peerShutDown(int(fd))
			}
			// Always true: RawConn.Read would otherwise wait for readability.
			return true
		}
	})
	if err != nil {
		return false // the connection is already closed
	}
	return connected
}
