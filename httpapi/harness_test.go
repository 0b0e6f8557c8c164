package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// testServer is a real fasthttp server on a random loopback port in front of a fakeBackend.
type testServer struct {
	t    *testing.T
	srv  *Server
	fake *fakeBackend
	addr string
	logs *lockedWriter
	// catchUp is set on a cluster's follower (cluster_e2e_test.go): it waits until the node
	// applied everything its leader has.
	catchUp func()
	// retryRefusals is set on a cluster's node (cluster_e2e_test.go): a request the node refused
	// because leadership was moving (refusedBetweenLeaders) is sent again, as Queen's clients
	// retry a 503, so that a leader change under CI load does not fail a test about something
	// else.
	retryRefusals bool
}

// refusedBetweenLeaders are the 503 answers forward.go gives before anything of the request
// ran anywhere: the node knows no leader, or the node a follower forwarded to no longer leads
// and does not forward again. Retrying them can never apply a request twice (a broker's own
// "does not lead its cluster" can follow a proposal whose outcome is unknown, so it is not
// here).
var refusedBetweenLeaders = []string{
	`{"error":"Service unavailable: this node does not lead its cluster and does not forward a forwarded request"}`,
	`{"error":"Service unavailable: no leader is known to this node"}`,
}

// refusedReads are the further 503 answers a read (GET) gets while leadership moves: its read
// barrier could not confirm the leadership (read_barrier.go), or the node stopped leading
// before or while it answered (respond.go). A read applies nothing, so sending it again is
// always safe.
var refusedReads = []string{
	`{"error":"Service unavailable: this node could not confirm that it leads its cluster and that what it read is committed; retry"}`,
	`{"error":"Service unavailable: this node does not lead its cluster"}`,
	`{"error":"Service unavailable: this node lost its leadership while answering; retry"}`,
}

// refusedForLeaderChange reports whether r is an answer doRaw sends method's request again
// for: a refusedBetweenLeaders one, or for a GET a refusedReads one.
func refusedForLeaderChange(method string, r response) bool {
	if r.status != http.StatusServiceUnavailable {
		return false
	}
	return slices.Contains(refusedBetweenLeaders, string(r.body)) ||
		method == http.MethodGet && slices.Contains(refusedReads, string(r.body))
}

// leaderChangeWait bounds how long doRaw keeps resending a refusedBetweenLeaders request: an
// election with e2eRaft's timings takes one to two seconds, several under the race detector on
// a loaded box.
const leaderChangeWait = 30 * time.Second

// awaitApplied returns once the node has applied every entry its leader had applied at the
// call: at once on a single node or a leader. A follower's own routes (/metrics/prometheus)
// show its applied state, which follows the leader's by one commit round.
func (ts *testServer) awaitApplied() {
	ts.t.Helper()
	if ts.catchUp != nil {
		ts.catchUp()
	}
}

func startServer(t *testing.T, fake *fakeBackend, cfg Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	logs := &lockedWriter{w: &bytes.Buffer{}}
	cfg.Logger = zerolog.New(logs)
	if cfg.DefaultPopTimeout == 0 {
		cfg.DefaultPopTimeout = 30 * time.Second // independent of the test process's environment
	}
	srv := New(fake, fake, cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return &testServer{t: t, srv: srv, fake: fake, addr: ln.Addr().String(), logs: logs}
}

// response is one HTTP answer, with the raw bytes for checks no client library would show
// (a 204 must carry no body and no Content-Length).
type response struct {
	status int
	header http.Header
	body   []byte
	raw    []byte
}

// json decodes the body into a generic value for field-by-field comparison.
func (r response) json(t *testing.T) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(r.body, &v), "body %q", r.body)
	return v
}

// do sends one request over a fresh connection, with the path written exactly as given.
func (ts *testServer) do(method, path, body string) response {
	ts.t.Helper()
	return ts.doRaw(method, path, body, nil)
}

func (ts *testServer) doRaw(method, path, body string, extraHeaders map[string]string) response {
	ts.t.Helper()
	r := ts.send(method, path, body, extraHeaders)
	if !ts.retryRefusals {
		return r
	}
	deadline := time.Now().Add(leaderChangeWait)
	for pause := 10 * time.Millisecond; refusedForLeaderChange(method, r) && time.Now().Before(deadline); pause = min(2*pause, 500*time.Millisecond) {
		ts.t.Logf("%s %s: %s; sending it again (the cluster is between leaders)", method, path, r.body)
		time.Sleep(pause) // the retry's backoff, as a client's: no event says a leader is back
		r = ts.send(method, path, body, extraHeaders)
	}
	return r
}

// send is doRaw's one attempt: one request over a fresh connection.
func (ts *testServer) send(method, path, body string, extraHeaders map[string]string) response {
	ts.t.Helper()
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	require.NoError(ts.t, err)
	defer conn.Close()
	require.NoError(ts.t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n", method, path)
	for k, v := range extraHeaders {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	if body != "" || method == "POST" {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.WriteString(body)
	_, err = conn.Write(req.Bytes())
	require.NoError(ts.t, err)
	raw, err := io.ReadAll(conn)
	require.NoError(ts.t, err)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	require.NoError(ts.t, err, "raw response %q", raw)
	b, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b, raw: raw}
}

// requireJSON asserts status, Content-Type and the exact JSON body (every field, every type).
func requireJSON(t *testing.T, r response, status int, want string) {
	t.Helper()
	require.Equal(t, status, r.status, "body %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.JSONEq(t, want, string(r.body))
}

// lockedWriter lets the server log from many goroutines into one test buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// reportsOf is the Reports a test server reads from b: the reports of a real broker's view,
// or the in-memory twin itself (fakeBackend and its wrappers have both sides).
func reportsOf(t testing.TB, b Backend) Reports {
	if br, ok := b.(*broker.Broker); ok {
		return report.New(br.View())
	}
	r, ok := b.(Reports)
	require.True(t, ok, "%T has no reports", b)
	return r
}
