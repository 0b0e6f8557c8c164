package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a `comb serve` child process on a fresh data directory and a free loopback port:
// one side of one run of a comparison. It is the only place the bench starts a process.
type Server struct {
	URL string // http://127.0.0.1:<port>
	PID int

	dir    string // the run's fresh directory (the data directory is dir/data)
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed when the process has been reaped; waitErr is then set
	waitMu sync.Mutex
	// waitErr is what Wait returned: nil for exit status 0.
	waitErr error
}

// Timeouts of a server's life in a comparison.
const (
	// serverReadyTimeout bounds start-up until GET /health answers 200: an empty data
	// directory opens in milliseconds, but a loaded 2-core box can stall a start for seconds.
	serverReadyTimeout = 60 * time.Second
	// serverStopTimeout bounds SIGTERM to exit; comb serve itself gives in-flight requests
	// 30 s (cmd/comb serve.go shutdownGrace).
	serverStopTimeout = 45 * time.Second
	// serverStartAttempts: a free port found by binding port 0 can be taken by another process
	// before the server binds it, so a server that exits before it is ready is tried again on a
	// new port this many times in all.
	serverStartAttempts = 3
	// serverLogTail is how much of the server's output an error quotes.
	serverLogTail = 4 << 10
)

// reservedServeFlags are the serve flags a comparison sets itself for each run.
var reservedServeFlags = []string{"addr", "data-dir"}

// CheckServeArgs refuses serve flags that would take the port or data directory out of the
// comparison's hands (ErrConfig).
func CheckServeArgs(args []string) error {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue // a value
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, r := range reservedServeFlags {
			if name == r {
				return fmt.Errorf("serve flag %q: each run sets --addr and --data-dir itself: %w", a, ErrConfig)
			}
		}
	}
	return nil
}

// StartServer runs `binary serve --log-level warn <serveArgs> --addr 127.0.0.1:<free port>
// --data-dir <fresh dir under dataRoot>/data` and returns once GET /health answers 200. The
// child inherits this process's environment and gets SIGTERM if this process dies first
// (Linux parent-death signal), so a killed comparison leaves no server behind. On error
// nothing is left running and the fresh directory is removed; the error quotes the end of the
// server's output.
func StartServer(ctx context.Context, binary string, serveArgs []string, dataRoot string) (*Server, error) {
	if err := CheckServeArgs(serveArgs); err != nil {
		return nil, err
	}
	var err error
	for attempt := 1; attempt <= serverStartAttempts; attempt++ {
		var s *Server
		var exited bool
		s, exited, err = startServerOnce(ctx, binary, serveArgs, dataRoot)
		if err == nil {
			return s, nil
		}
		if !exited || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// startServerOnce is one start; exited reports that the process ended on its own before it
// was ready (worth another port), as opposed to a start-up that never got that far.
func startServerOnce(ctx context.Context, binary string, serveArgs []string, dataRoot string) (s *Server, exited bool, err error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, false, err
	}
	dir, err := os.MkdirTemp(dataRoot, "comb-bench-run-")
	if err != nil {
		return nil, false, fmt.Errorf("fresh data directory under %s: %w", dataRoot, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"serve", "--log-level", "warn"}, serveArgs...)
	args = append(args, "--addr", addr, "--data-dir", filepath.Join(dir, "data"))
	if s, err = spawn(binary, args, dir, "http://"+addr); err != nil {
		return nil, false, err
	}
	if err := s.waitReady(ctx); err != nil {
		select {
		case <-s.exited:
			exited = true
		default:
		}
		_ = s.Stop()
		return nil, exited, err
	}
	return s, false, nil
}

// spawn starts binary with args as a Server whose data lives under dir (removed by Stop, or
// here when the start fails) and whose HTTP API is at url; it does not wait for it to be ready.
func spawn(binary string, args []string, dir, url string) (*Server, error) {
	s := &Server{URL: url, dir: dir, out: &tailBuffer{max: serverLogTail}, exited: make(chan struct{})}
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		err := s.cmd.Wait()
		s.waitMu.Lock()
		s.waitErr = err
		s.waitMu.Unlock()
		close(s.exited)
	}()
	return s, nil
}

// waitReady polls GET /health every 20 ms until it answers 200, the process exits, ctx ends
// or serverReadyTimeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(serverReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(s.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s serve exited before it was ready (%v); its output ends: %s", s.cmd.Path, s.exitErr(), s.out)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s/health: %w", s.URL, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%s/health did not answer 200 within %v; output: %s", s.URL, serverReadyTimeout, s.out)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, waits up to serverStopTimeout for the process to exit (then kills it),
// and removes the run's data directory, so the next run does not share the disk with this
// one's leftover writeback. It returns an error when the server had to be killed or exited
// with a non-zero status: a shutdown that fails is a finding of the comparison too. Calling it
// again returns the same outcome.
func (s *Server) Stop() error {
	defer os.RemoveAll(s.dir)
	select {
	case <-s.exited:
		return s.stopOutcome(false)
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(serverStopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		return s.stopOutcome(false)
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
		return s.stopOutcome(true)
	}
}

// Kill ends the process with SIGKILL, waits for it and removes the run's data directory.
func (s *Server) Kill() {
	defer os.RemoveAll(s.dir)
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func (s *Server) stopOutcome(killed bool) error {
	if killed {
		return fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM and was killed; output: %s", s.cmd.Path, s.PID, serverStopTimeout, s.out)
	}
	if err := s.exitErr(); err != nil {
		return fmt.Errorf("%s (pid %d) exited with %v; output: %s", s.cmd.Path, s.PID, err, s.out)
	}
	return nil
}

func (s *Server) exitErr() error {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	return s.waitErr
}

// freeLoopbackPort asks the kernel for a free TCP port on 127.0.0.1 and releases it for the
// server to bind.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free loopback port: %w", err)
	}
	defer ln.Close()
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("free loopback port: listener address %v is not TCP", ln.Addr())
	}
	return ta.Port, nil
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use (the child's
// stdout and stderr copiers write while an error reads it).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is the tail, trimmed, or "(no output)".
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.b))
	if s == "" {
		return "(no output)"
	}
	return s
}
