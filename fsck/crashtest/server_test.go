//go:build crash

package crashtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// combBinary builds ./cmd/comb once per test process and returns the path.
func combBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "comb-crash-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "comb")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/comb")
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/comb: %w\n%s", err, msg)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

// server is one `comb serve` subprocess on a loopback port.
type server struct {
	bin, dataDir, logPath string
	extra                 []string
	addr                  string
	cmd                   *exec.Cmd
	exited                chan struct{}
	exitErr               error
}

func newServer(t *testing.T, dataDir string, extra ...string) *server {
	return &server{bin: combBinary(t), dataDir: dataDir, logPath: filepath.Join(dataDir+".logs", "serve.log"), extra: extra}
}

func (s *server) url() string { return "http://" + s.addr }

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// launch starts the process without waiting for it to be healthy.
func (s *server) launch() error {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	s.addr = addr
	if err := os.MkdirAll(filepath.Dir(s.logPath), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n===== launch %s on %s\n", time.Now().Format(time.RFC3339Nano), addr)
	args := append([]string{"serve", "--addr", addr, "--data-dir", s.dataDir, "--sync", "always"}, s.extra...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		s.exitErr = cmd.Wait()
		logf.Close()
		close(done)
	}(s.cmd, s.exited)
	return nil
}

// start launches the server and waits until /health answers 200.
func (s *server) start(timeout time.Duration) error {
	if err := s.launch(); err != nil {
		return err
	}
	return s.waitHealthy(timeout)
}

func (s *server) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("comb serve exited before it was healthy (%v); log %s:\n%s", s.exitErr, s.logPath, s.logTail())
		case <-tick.C:
		}
		resp, err := client.Get(s.url() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("comb serve not healthy within %v; log %s:\n%s", timeout, s.logPath, s.logTail())
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// stop sends SIGTERM and waits up to timeout, then SIGKILLs.
func (s *server) stop(timeout time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sigterm)
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("comb serve did not stop within %v", timeout)
	}
	s.cmd = nil
	return nil
}

func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// runComb runs a comb subcommand and returns its exit code, stdout and stderr.
func runComb(t *testing.T, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, combBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.Truef(t, ok, "comb %v: %v", args, err)
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}
