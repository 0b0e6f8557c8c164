package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Child-process mode: with COMB_TEST_SERVE_NOFILE set, the test binary lowers its own
// RLIMIT_NOFILE (soft and hard) to that value and runs `comb serve` with the arguments in
// COMB_TEST_SERVE_ARGS (one per line), as a shell's `ulimit -n` would. With COMB_TEST_AS_COMB
// set it is the comb binary itself: `<test binary> serve ...` (bench compare's test).
func TestMain(m *testing.M) {
	if os.Getenv("COMB_TEST_AS_COMB") != "" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	if n := os.Getenv("COMB_TEST_SERVE_NOFILE"); n != "" {
		limit, err := strconv.ParseUint(n, 10, 64)
		if err == nil {
			err = unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lowering RLIMIT_NOFILE:", err)
			os.Exit(3)
		}
		os.Exit(runServe(strings.Split(os.Getenv("COMB_TEST_SERVE_ARGS"), "\n")))
	}
	os.Exit(m.Run())
}

func TestConnRoomFitsConnectionsNextToTheFileBudget(t *testing.T) {
	cases := []struct {
		name         string
		nofile       uint64
		maxOpenFiles int
		want         int
	}{
		{"256: files take half, 64 reserved", 256, 512, 256 - 128 - 64},
		{"1024: files take half", 1024, 512, 1024 - 512 - 64},
		{"a small file budget leaves more for connections", 1024, 100, 1024 - 100 - 64},
		{"no file cap: files may take half", 4096, -1, 4096 - 2048 - 64},
		{"too small a limit still allows one", 100, 512, 1},
		{"unknown limit: no bound", 0, 512, int(^uint(0) >> 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, connRoom(c.nofile, c.maxOpenFiles))
		})
	}
}

func TestResolveMaxConns(t *testing.T) {
	log := zerolog.Nop()
	require.Equal(t, 64, resolveMaxConns(0, 512, 256, log), "derived from the limit")
	require.Equal(t, maxDefaultConns, resolveMaxConns(0, 512, 1<<20, log), "the derived default is bounded")
	require.Equal(t, maxDefaultConns, resolveMaxConns(0, 512, 0, log), "unknown limit: the bound")
	require.Equal(t, 50, resolveMaxConns(50, 512, 256, log), "an explicit value that fits")
	require.Equal(t, 64, resolveMaxConns(1000, 512, 256, log), "an explicit value is lowered to the room")
	require.Equal(t, 50000, resolveMaxConns(50000, 512, 1<<20, log), "an explicit value above the default bound")
	require.Equal(t, 0, resolveMaxConns(-1, 512, 256, log), "< 0: no cap")
}

// syncBuffer collects a child's stderr while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond every few milliseconds until it holds, the child exits, or timeout.
func waitFor(t *testing.T, exited <-chan error, logs *syncBuffer, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("comb serve exited (%v) while waiting for %s; log:\n%s", err, what, logs.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; log:\n%s", what, logs.String())
		}
	}
}

// Issue 10, acceptance: `comb serve` under RLIMIT_NOFILE 256 takes 400 idle connections, and
// once they are closed it is still running and answers GET /health 200. With the derived cap
// (256 − 128 file budget − 64 reserved = 64 connections) the rest are refused with 503; with no
// cap the accept loop runs out of descriptors (EMFILE) and rides it out.
func TestServeSurvivesAConnectionFloodUnderALowFileLimit(t *testing.T) {
	cases := []struct {
		name     string
		extra    []string
		maxConns float64
	}{
		{"derived cap", nil, 64},
		{"no cap, EMFILE", []string{"--max-conns", "-1"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := freeAddr(t)
			args := append([]string{"--addr", addr, "--data-dir", t.TempDir(), "--sync", "never", "--log-level", "warn"}, c.extra...)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "COMB_TEST_SERVE_NOFILE=256", "COMB_TEST_SERVE_ARGS="+strings.Join(args, "\n"))
			logs := &syncBuffer{}
			cmd.Stderr = logs
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
			})
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			get := func(path string) (int, string) {
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					return 0, err.Error()
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			waitFor(t, exited, logs, 30*time.Second, "the server to come up", func() bool { code, _ := get("/health"); return code == 200 })

			var conns []net.Conn
			refusedSeen := 0
			for range 400 {
				conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
				require.NoError(t, err, "the kernel completes the handshake (backlog) whatever the server does")
				conns = append(conns, conn)
			}
			if c.maxConns > 0 {
				// Every connection past the cap is refused: read until that many have been closed.
				var closed sync.WaitGroup
				var mu sync.Mutex
				refused := 0
				for _, conn := range conns {
					closed.Add(1)
					go func() {
						defer closed.Done()
						_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
						raw, err := io.ReadAll(conn)
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() {
							return // accepted and idle
						}
						if len(raw) > 0 {
							require.Contains(t, string(raw), "HTTP/1.1 503 Service Unavailable")
						}
						mu.Lock()
						refused++
						mu.Unlock()
					}()
				}
				closed.Wait()
				// The /health poll before the flood may still hold its slot for a moment.
				require.GreaterOrEqual(t, refused, 400-int(c.maxConns), "all but the %v connections of the cap are refused", c.maxConns)
				require.LessOrEqual(t, refused, 400-int(c.maxConns)+1)
				refusedSeen = refused
			} else {
				waitFor(t, exited, logs, 30*time.Second, "the accept loop to run out of descriptors", func() bool {
					return strings.Contains(logs.String(), "cannot accept connections")
				})
			}
			for _, conn := range conns {
				require.NoError(t, conn.Close())
			}
			waitFor(t, exited, logs, 30*time.Second, "GET /health 200 after the flood", func() bool { code, _ := get("/health"); return code == 200 })

			code, metrics := get("/metrics/prometheus")
			require.Equal(t, 200, code)
			require.Equal(t, c.maxConns, promSample(t, metrics, "comb_max_connections"))
			if c.maxConns > 0 {
				// Polls of /health right after the close may be refused too.
				require.GreaterOrEqual(t, promSample(t, metrics, "comb_connections_refused_total"), float64(refusedSeen))
			} else {
				require.Greater(t, promSample(t, metrics, "comb_accept_errors_total"), float64(0))
			}

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-exited:
				require.NoError(t, err, "SIGTERM after the flood exits 0; log:\n%s", logs.String())
			case <-time.After(30 * time.Second):
				t.Fatal("comb serve did not stop on SIGTERM")
			}
		})
	}
}

// promSample reads the one sample of a family from Prometheus text.
func promSample(t *testing.T, text, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `(?:\{[^}]*\})? (\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, m, "no %s in\n%s", name, text)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}
