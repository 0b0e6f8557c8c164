package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// barrierBackend is the fake backend with a broker's ReadBarrier that answers err and counts
// its calls.
type barrierBackend struct {
	*fakeBackend
	mu    sync.Mutex
	err   error
	calls int
}

func (b *barrierBackend) ReadBarrier() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	return b.err
}

func (b *barrierBackend) set(err error) (calls int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, b.calls, b.err = b.calls, 0, err
	return calls
}

// startBarrierServer is startServer for a barrierBackend.
func startBarrierServer(t *testing.T, b *barrierBackend, cfg Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	logs := &lockedWriter{w: &bytes.Buffer{}}
	cfg.Logger = zerolog.New(logs)
	cfg.DefaultPopTimeout = 30 * time.Second
	srv := New(b, reportsOf(t, b), cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return &testServer{t: t, srv: srv, fake: b.fakeBackend, addr: ln.Addr().String(), logs: logs}
}

// Issue 22: on a cluster node every read route's answer waits for the broker's ReadBarrier and
// becomes a 503 with Retry-After when it fails; writes, pops and the node's own routes never
// ask it; a single node never asks it.
func TestClusterReadsAnswerOnlyWhatTheBarrierConfirms(t *testing.T) {
	b := &barrierBackend{fakeBackend: newFake()}
	ts := startBarrierServer(t, b, Config{Cluster: &fakeCluster{self: "n1", id: "n1", leading: true}})
	reads := []struct{ method, path, body string }{
		{"GET", "/api/v1/consumer-groups/g", ""},
		{"GET", "/api/v1/consumer-groups", ""},
		{"GET", "/api/v1/resources/queues", ""},
		{"GET", "/api/v1/messages", ""},
		{"GET", "/api/v1/status", ""},
		{"GET", "/api/v1/dlq", ""},
		{"POST", "/streams/v1/state/get", `{}`},
	}
	for _, r := range reads {
		b.set(nil)
		ok := ts.do(r.method, r.path, r.body)
		require.Equal(t, 1, b.set(errors.New("broker: this node does not lead its cluster")), "%s %s asks the barrier once", r.method, r.path)
		refused := ts.do(r.method, r.path, r.body)
		require.Equal(t, 503, refused.status, "%s %s (answered %d when confirmed)", r.method, r.path, ok.status)
		require.Equal(t, "1", refused.header.Get("Retry-After"))
		require.Contains(t, string(refused.body), "could not confirm that it leads")
	}
	b.set(errors.New("refused"))
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"GET", "/metrics", ""},
		{"GET", "/metrics/prometheus", ""},
		{"POST", "/api/v1/push", `{"items":[{"queue":"q","payload":1}]}`},
		{"GET", "/api/v1/pop/queue/q?wait=false", ""},
		{"POST", "/api/v1/ack", `{"transactionId":"x","partitionId":"00000000-0000-0000-0000-000000000000","status":"completed"}`},
	} {
		ts.do(r.method, r.path, r.body)
		require.Zero(t, b.set(errors.New("refused")), "%s %s does not ask the barrier", r.method, r.path)
	}

	single := &barrierBackend{fakeBackend: newFake(), err: errors.New("refused")}
	one := startBarrierServer(t, single, Config{})
	r := one.do("GET", "/api/v1/consumer-groups/g", "")
	require.Equal(t, 200, r.status)
	require.Zero(t, single.set(nil), "a single node never asks")
}
