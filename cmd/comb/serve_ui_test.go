package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A --ui-dir that cannot be served stops `comb serve` before it opens the data directory.
func TestServeRefusesAUIDirWithoutIndex(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	require.Equal(t, 2, runServe([]string{"--addr", freeAddr(t), "--data-dir", dataDir, "--ui-dir", t.TempDir()}))
	require.NoDirExists(t, dataDir, "nothing was opened")
}

// COMB_UI_DIR (the environment of --ui-dir) replaces the built-in page at / and for client
// routes, and the API keeps its 404 (spec 8.10).
func TestServeUIDirFromTheEnvironment(t *testing.T) {
	ui := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ui, "index.html"), []byte("<html>MINE</html>"), 0o644))
	t.Setenv("COMB_UI_DIR", ui)
	addr := freeAddr(t)
	exited := make(chan int, 1)
	go func() {
		exited <- runServe([]string{"--addr", addr, "--data-dir", t.TempDir(), "--sync", "never", "--log-level", "error"})
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, _ := get("/health"); st == 200 {
			break
		}
		require.True(t, time.Now().Before(deadline), "server did not come up")
		select { // poll until the listener answers, or the server gives up
		case code := <-exited:
			t.Fatalf("comb serve exited with %d", code)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, path := range []string{"/", "/queues/orders"} {
		st, body := get(path)
		require.Equal(t, 200, st, path)
		require.Equal(t, "<html>MINE</html>", body, path)
	}
	st, body := get("/api/v1/no-such-route")
	require.Equal(t, 404, st)
	require.Equal(t, `{"error":"Not Found"}`, body)

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-exited:
		require.Equal(t, 0, code)
	case <-time.After(30 * time.Second):
		t.Fatal("comb serve did not stop on SIGINT")
	}
}
