package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeQueen is a tiny in-memory Queen v1 server: push appends, pop hands out undelivered
// messages with one lease, ack/batch answers success. It records every request it saw.
type fakeQueen struct {
	mu        sync.Mutex
	requests  []recorded
	msgs      map[string][]fakeMsg // queue → messages
	next      map[string]int       // queue (+ " " + consumer group when perGroup) → first undelivered
	perGroup  bool                 // each consumer group reads every message (fanout); else one cursor per queue
	acked     int
	pushFails bool           // answer every push with 500
	badOption bool           // answer every configure with 400
	commits   map[string]int // "cycle" / "transaction" → requests answered
}

type recorded struct {
	method, path  string
	authorization string
	query         url.Values
	body          []byte
}

type fakeMsg struct {
	TransactionID string          `json:"transactionId"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	Queue         string          `json:"queue"`
}

func newFakeQueen() *fakeQueen {
	return &fakeQueen{msgs: map[string][]fakeMsg{}, next: map[string]int{}, commits: map[string]int{}}
}

func (f *fakeQueen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, recorded{method: r.Method, path: r.URL.Path, authorization: r.Header.Get("Authorization"), query: r.URL.Query(), body: body})
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/configure":
		if f.badOption {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"retentionSeconds must be a number"}`))
			return
		}
		_, _ = w.Write([]byte(`{"configured":true}`))
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/push":
		if f.pushFails {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"disk on fire"}`))
			return
		}
		var req struct{ Items []fakeMsg }
		if err := json.Unmarshal(body, &req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprintf(w, `{"error":"Invalid JSON: %s"}`, err)
			return
		}
		out := make([]map[string]any, len(req.Items))
		for i, it := range req.Items {
			f.msgs[it.Queue] = append(f.msgs[it.Queue], it)
			out[i] = map[string]any{"index": i, "status": "queued", "transaction_id": it.TransactionID}
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/pop/queue/"):
		q := strings.TrimPrefix(r.URL.Path, "/api/v1/pop/queue/")
		var batch int
		_, _ = fmt.Sscan(r.URL.Query().Get("batch"), &batch)
		cur := q
		if f.perGroup {
			cur += " " + r.URL.Query().Get("consumerGroup")
		}
		all := f.msgs[q][f.next[cur]:]
		if len(all) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		take := all[:min(batch, len(all))]
		f.next[cur] += len(take)
		msgs := make([]map[string]any, len(take))
		for i, m := range take {
			msgs[i] = map[string]any{"id": fmt.Sprint(i), "transactionId": m.TransactionID, "data": m.Payload,
				"partitionId": "pid-" + m.Partition, "partition": m.Partition, "leaseId": "lease-1"}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "queue": q, "leaseId": "lease-1", "messages": msgs})
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/ack/batch":
		var req struct{ Acknowledgments []map[string]any }
		_ = json.Unmarshal(body, &req)
		out := make([]map[string]any, len(req.Acknowledgments))
		for i := range out {
			out[i] = map[string]any{"index": i, "success": true, "error": nil}
		}
		f.acked += len(out)
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodPost && r.URL.Path == "/streams/v1/queries":
		_, _ = w.Write([]byte(`{"success":true,"query_id":"Q1","name":"n","config_hash":"bench","fresh":true,"reset":false}`))
	case r.Method == http.MethodPost && r.URL.Path == "/streams/v1/cycle":
		var req struct {
			Ack struct{ Count int } `json:"ack"`
		}
		_ = json.Unmarshal(body, &req)
		f.acked += req.Ack.Count
		f.commits["cycle"]++
		_, _ = w.Write([]byte(`{"success":true,"push_results":[],"ack_result":null}`))
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/transaction":
		f.commits["transaction"]++
		_, _ = w.Write([]byte(`{"transactionId":"x","success":true,"results":[]}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Not Found"}`))
	}
}

func (f *fakeQueen) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func newFakeDriver(t *testing.T, f *fakeQueen) *HTTPDriver {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	d, err := NewHTTPDriver(srv.URL, 4, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestHTTPDriverPushPopAckRequests(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	ctx := context.Background()
	require.NoError(t, d.Setup(ctx, Topology{RunID: "r1", Queues: 2, Partitions: 3, Groups: []string{"g"}}))
	w, err := d.NewWorker(5)
	require.NoError(t, err)
	defer w.Close()

	// push: POST /api/v1/push, 3 items to queue 1 partition 2 (spec 1.1).
	p := NewPayload(64)
	p.Stamp(1764374400000000042)
	failed, err := w.Push(ctx, Dest{Queue: 1, Partition: 2}, p.Bytes(), 3)
	require.NoError(t, err)
	assert.Equal(t, 0, failed)
	req := f.last()
	assert.Equal(t, http.MethodPost, req.method)
	assert.Equal(t, "/api/v1/push", req.path)
	var pb pushBody
	require.NoError(t, json.Unmarshal(req.body, &pb))
	require.Len(t, pb.Items, 3)
	for i, it := range pb.Items {
		assert.Equal(t, "bench-r1-q1", it.Queue)
		assert.Equal(t, "p2", it.Partition)
		assert.Equal(t, fmt.Sprintf("r1-w5-%d", i), it.TransactionID)
		assert.JSONEq(t, string(p.Bytes()), string(it.Payload))
	}

	// pop: wildcard route with batch, partitions, consumerGroup, wait and timeout (spec 3.1, 3.2).
	b, err := w.Pop(ctx, Source{Queue: 1, Group: "g", Max: 10, Wait: 1500 * time.Millisecond, WantTimes: true})
	require.NoError(t, err)
	req = f.last()
	assert.Equal(t, http.MethodGet, req.method)
	assert.Equal(t, "/api/v1/pop/queue/bench-r1-q1", req.path)
	assert.Equal(t, url.Values{"batch": {"10"}, "partitions": {"1"}, "consumerGroup": {"g"}, "wait": {"true"}, "timeout": {"1500"}}, req.query)
	require.Equal(t, 3, b.Len())
	for i := 0; i < 3; i++ {
		assert.Equal(t, int64(1764374400000000042), b.SentNanos(i))
	}

	// ack: POST /api/v1/ack/batch with every message, its partitionId and lease (spec 4.2).
	failed, err = w.Ack(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, 0, failed)
	req = f.last()
	assert.Equal(t, http.MethodPost, req.method)
	assert.Equal(t, "/api/v1/ack/batch", req.path)
	assert.JSONEq(t, `{"acknowledgments":[
		{"transactionId":"r1-w5-0","partitionId":"pid-p2","leaseId":"lease-1","status":"completed"},
		{"transactionId":"r1-w5-1","partitionId":"pid-p2","leaseId":"lease-1","status":"completed"},
		{"transactionId":"r1-w5-2","partitionId":"pid-p2","leaseId":"lease-1","status":"completed"}],
		"consumerGroup":"g"}`, string(req.body))

	// 204: an empty batch, not an error (spec 3.4).
	b, err = w.Pop(ctx, Source{Queue: 1, Max: 10})
	require.NoError(t, err)
	assert.Equal(t, 0, b.Len())
	assert.Equal(t, url.Values{"batch": {"10"}, "partitions": {"1"}}, f.last().query, "queue mode sends no consumerGroup; no wait sends no wait")

	// transactionIds keep counting across requests so a run never repeats one.
	_, err = w.Push(ctx, Dest{Queue: 0, Partition: 0}, p.Bytes(), 1)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(f.last().body, &pb))
	assert.Equal(t, "r1-w5-3", pb.Items[0].TransactionID)
}

func TestHTTPDriverStatusErrors(t *testing.T) {
	f := newFakeQueen()
	f.pushFails = true
	d := newFakeDriver(t, f)
	require.NoError(t, d.Setup(context.Background(), Topology{RunID: "r", Queues: 1, Partitions: 1}))
	w, err := d.NewWorker(0)
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Push(context.Background(), Dest{}, []byte(`1`), 1)
	require.ErrorIs(t, err, ErrHTTPStatus)
	assert.Equal(t, "http_500", ErrorKind(err))
}

func TestNewHTTPDriverRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:6632", "ftp://x", "http://"} {
		_, err := NewHTTPDriver(u, 1, nil)
		assert.ErrorIs(t, err, ErrConfig, u)
	}
}

func TestRunConsumeDrainsThePrefilledBacklog(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	cfg := DefaultConfig()
	cfg.Workload = WorkloadConsume
	cfg.Partitions = 2
	cfg.Concurrency = 2
	cfg.Batch = 50
	cfg.Prefill = 1000
	cfg.Warmup = 0
	cfg.Duration = time.Minute // the drained backlog ends the run, not the clock
	cfg, err := cfg.Normalize()
	require.NoError(t, err)

	res, err := Run(context.Background(), cfg, d, nil)
	require.NoError(t, err)
	assert.True(t, res.Drained)
	assert.Equal(t, int64(1000), res.Messages)
	assert.Equal(t, int64(0), res.ErrorsTotal, "%v", res.Errors)
	f.mu.Lock()
	assert.Equal(t, 1000, f.acked, "every delivered message acked once")
	f.mu.Unlock()
	assert.Equal(t, int64(20), res.RequestLatencyMs["ack"].Count, "1000 messages in acks of 50")
}

func TestRunPushCountsWhatTheServerStored(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	cfg := DefaultConfig()
	cfg.Concurrency = 2
	cfg.Batch = 10
	cfg.Warmup = 0
	cfg.Duration = 100 * time.Millisecond
	cfg, err := cfg.Normalize()
	require.NoError(t, err)

	res, err := Run(context.Background(), cfg, d, nil)
	require.NoError(t, err)
	f.mu.Lock()
	stored := 0
	for _, m := range f.msgs {
		stored += len(m)
	}
	f.mu.Unlock()
	assert.Positive(t, res.Messages)
	assert.LessOrEqual(t, res.Messages, int64(stored), "the window never counts more than was stored")
	assert.Equal(t, res.Messages, res.RequestLatencyMs["push"].Count*10, "each recorded request carried one batch")
	assert.Equal(t, WorkloadPush, res.Workload)
	assert.Equal(t, DriverComb, res.Driver)
}

// comb bench fanout: every group's deliveries land in its own e2e histogram as well as in the
// all-groups one, and the worst group p99 is the highest of theirs (issue 23).
func TestRunFanoutReportsEachGroupsEndToEnd(t *testing.T) {
	f := newFakeQueen()
	f.perGroup = true
	d := newFakeDriver(t, f)
	cfg := DefaultConfig()
	cfg.Workload = WorkloadFanout
	cfg.Groups = 3
	cfg.Concurrency = 3
	cfg.Producers = 1
	cfg.Partitions = 1
	cfg.Batch = 10
	cfg.WaitMs = 1 // the fake answers 204 at once when a group has read everything
	cfg.Warmup = 0
	cfg.Duration = 300 * time.Millisecond
	cfg, err := cfg.Normalize()
	require.NoError(t, err)

	res, err := Run(context.Background(), cfg, d, nil)
	require.NoError(t, err)
	require.NotNil(t, res.E2ELatencyMs)
	require.Len(t, res.GroupE2ELatencyMs, 3)
	var sum int64
	worst := 0.0
	for _, g := range []string{"g0", "g1", "g2"} {
		p, ok := res.GroupE2ELatencyMs[g]
		require.True(t, ok, "group %s", g)
		assert.Positive(t, p.Count, "group %s delivered", g)
		sum += p.Count
		worst = max(worst, p.P99)
	}
	assert.Equal(t, res.E2ELatencyMs.Count, sum, "each delivery is in exactly one group's histogram")
	assert.Equal(t, worst, res.WorstGroupE2EP99Ms)
	var text strings.Builder
	res.WriteText(&text)
	assert.Contains(t, text.String(), "e2e g2")
	assert.Contains(t, text.String(), "worst group e2e p99")
}

// comb bench --token: every request carries the Bearer token (servers with JWT auth, spec 9.1).
func TestHTTPDriverSendsToken(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	d.authorization = bearerHeader("tok.en.sig")
	require.NoError(t, d.Setup(context.Background(), Topology{RunID: "r", Queues: 1, Partitions: 1}))
	w, err := d.NewWorker(0)
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Push(context.Background(), Dest{}, []byte(`1`), 1)
	require.NoError(t, err)
	assert.Equal(t, "Bearer tok.en.sig", f.last().authorization)
	assert.Nil(t, bearerHeader(""), "no token, no header")
}

// comb bench --interval: the window is cut into slices with their own rate, and the hold ratio
// is the last slice's rate over the first's.
func TestRunPushReportsIntervals(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	cfg := DefaultConfig()
	cfg.Concurrency = 2
	cfg.Batch = 10
	cfg.Warmup = 0
	cfg.Duration = 450 * time.Millisecond
	cfg.Interval = 100 * time.Millisecond
	cfg, err := cfg.Normalize()
	require.NoError(t, err)

	res, err := Run(context.Background(), cfg, d, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(res.Intervals), 2, "%+v", res.Intervals)
	for i, iv := range res.Intervals {
		assert.Positive(t, iv.MsgPerSec, "interval %d", i)
		assert.InDelta(t, 0.1, iv.Sec, 0.09, "interval %d", i)
	}
	first, last := res.Intervals[0], res.Intervals[len(res.Intervals)-1]
	assert.InDelta(t, last.MsgPerSec/first.MsgPerSec, res.HoldRate, 1e-9)
}

func TestHoldRatios(t *testing.T) {
	r, c := holdRatios([]Interval{{MsgPerSec: 200, ServerCPUMicrosPerRequest: 100}, {MsgPerSec: 50}, {MsgPerSec: 180, ServerCPUMicrosPerRequest: 150}})
	assert.InDelta(t, 0.9, r, 1e-9)
	assert.InDelta(t, 1.5, c, 1e-9)
	r, c = holdRatios([]Interval{{MsgPerSec: 200}})
	assert.Zero(t, r)
	assert.Zero(t, c)
}

// --retention-seconds configures each queue before the run (spec 2: retentionEnabled with
// retentionSeconds); without it Setup sends nothing.
func TestHTTPDriverSetupConfiguresRetention(t *testing.T) {
	f := newFakeQueen()
	d := newFakeDriver(t, f)
	require.NoError(t, d.Setup(context.Background(), Topology{RunID: "r", Queues: 2, Partitions: 1}))
	assert.Empty(t, f.requests)

	require.NoError(t, d.Setup(context.Background(), Topology{RunID: "r", Queues: 2, Partitions: 1, RetentionSeconds: 60}))
	require.Len(t, f.requests, 2)
	for i, req := range f.requests {
		assert.Equal(t, http.MethodPost, req.method)
		assert.Equal(t, "/api/v1/configure", req.path)
		assert.JSONEq(t, fmt.Sprintf(`{"queue":"bench-r-q%d","options":{"retentionEnabled":true,"retentionSeconds":60}}`, i), string(req.body))
	}

	f.badOption = true
	err := d.Setup(context.Background(), Topology{RunID: "r", Queues: 1, Partitions: 1, RetentionSeconds: 60})
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, StatusError{Op: OpConfigure, Status: 400, Body: `{"error":"retentionSeconds must be a number"}`}, *se)
}

// Retention is a Queen queue option: other drivers refuse it, and a negative value is refused.
func TestNormalizeRetentionSeconds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetentionSeconds = 60
	got, err := cfg.Normalize()
	require.NoError(t, err)
	assert.Equal(t, 60, got.RetentionSeconds)

	cfg.Driver = DriverRedis
	_, err = cfg.Normalize()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "driver comb only")

	cfg.Driver, cfg.RetentionSeconds = DriverComb, -1
	_, err = cfg.Normalize()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "--retention-seconds -1 is below 0")
}
