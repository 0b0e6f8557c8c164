package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func requireCORS(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "GET, POST, PUT, DELETE, OPTIONS", r.header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Content-Type, Authorization", r.header.Get("Access-Control-Allow-Headers"))
	require.Equal(t, "86400", r.header.Get("Access-Control-Max-Age"))
}

func TestOptionsOnAnyPathIs204WithCORS(t *testing.T) {
	ts := startServer(t, newFake(), Config{})
	for _, path := range []string{"/api/v1/push", "/anything/at/all", "/", "/api/v1/pop/queue/q"} {
		r := ts.do("OPTIONS", path, "")
		require.Equal(t, 204, r.status, path)
		require.Empty(t, r.body)
		requireCORS(t, r)
	}
}

func TestUnknownAndNeverImplementedRoutesAre404JSON(t *testing.T) {
	// spec 0.1 and the list under the route summary.
	ts := startServer(t, newFake(), Config{})
	cases := []struct{ method, path string }{
		{"GET", "/"},
		{"GET", "/nope"},
		{"GET", "/api/v1/resources/partitions"},
		{"DELETE", "/api/v1/queues/q/clear"},
		{"POST", "/api/v1/messages/pid/tx/retry"},
		{"POST", "/api/v1/messages/pid/tx/dlq"},
		{"GET", "/api/v1/stream/consume"},
		{"POST", "/api/v1/stream/query"},
		{"GET", "/api/v1/push"},               // wrong method
		{"POST", "/api/v1/pop/queue/q"},       // wrong method
		{"GET", "/api/v1/push/"},              // trailing segment
		{"GET", "/api/v2/push"},               // other version
		{"POST", "/api/v1/ack/batch/extra"},   // too deep
		{"GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m"}, // more segments than any route
	}
	for _, c := range cases {
		r := ts.do(c.method, c.path, "")
		requireJSON(t, r, 404, `{"error":"Not Found"}`)
		requireCORS(t, r)
	}
}

func TestEveryResponseCarriesCORSHeaders(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, r := range []response{
		ts.do("GET", "/health", ""),
		ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`),
		ts.do("POST", "/api/v1/push", `not json`),
		ts.do("GET", "/api/v1/pop/queue/q", ""),
		ts.do("GET", "/metrics/prometheus", ""),
	} {
		requireCORS(t, r)
	}
}

func TestBodyOverTheCapIs413WithAJSONBody(t *testing.T) {
	// spec 1.2, 1.9: configurable cap, 413 {"error":"Payload too large"}.
	fake := newFake()
	ts := startServer(t, fake, Config{MaxBodyBytes: 1024})
	body := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 2000) + `"}]}`
	r := ts.do("POST", "/api/v1/push", body)
	requireJSON(t, r, 413, `{"error":"Payload too large"}`)
	requireCORS(t, r)
	require.NotContains(t, fake.callList(), "Push")

	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","payload":"small"}]}`)
	require.Equal(t, 201, r.status, "a body under the cap still works")
}

func TestAPanicInAHandlerIsA500AndTheServerKeepsServing(t *testing.T) {
	// issue 4 "Bad input": no input may take the server down.
	fake := newFake()
	fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) { panic("boom") }
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`)
	requireJSON(t, r, 500, `{"error":"Internal server error"}`)
	requireCORS(t, r)
	require.Contains(t, ts.logs.String(), "handler panicked")

	fake.onPush = nil
	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`)
	require.Equal(t, 201, r.status)
}

func TestHealthIs503WhenStorageIsUnavailable(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{Version: "1.2.3"})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"healthy","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"}}`)
	fake.healthy = false
	r = ts.do("GET", "/health", "")
	requireJSON(t, r, 503, `{"status":"unhealthy","database":"disconnected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"}}`)
}

// issue 4: a damaged partition leaves the server serving the rest; /health says so (still 200).
func TestHealthIsDegradedWithDamagedPartitions(t *testing.T) {
	fake := newFake()
	fake.damaged = []broker.DamagedPartition{{Queue: "q", Partition: "p", PartitionID: "0198e4c2-0000-7000-8000-000000000001",
		File: "00000000000000000001.seg", StartByte: 10, EndByte: 200, FirstOffset: 1, LastOffset: 5, SinceMicros: 1785402764881042}}
	ts := startServer(t, fake, Config{Version: "1.2.3"})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"degraded","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "damaged":[{"queue":"q","partition":"p","partitionId":"0198e4c2-0000-7000-8000-000000000001",
	  "file":"00000000000000000001.seg","startByte":10,"endByte":200,"firstOffset":1,"lastOffset":5,
	  "since":"2026-07-30T09:12:44.881Z","action":"run comb fsck"}]}`)
}

func TestMetricsJSONHasQueensShape(t *testing.T) {
	fake := newFake()
	fake.stats = broker.Stats{PushMessages: 42}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/metrics", "")
	require.Equal(t, 200, r.status)
	m := r.json(t).(map[string]any)
	require.ElementsMatch(t, []string{"uptime", "requests", "messages", "database", "memory", "cpu"}, keys(m))
	require.Equal(t, float64(42), m["messages"].(map[string]any)["total"])
	require.GreaterOrEqual(t, m["requests"].(map[string]any)["total"].(float64), float64(1))
	require.ElementsMatch(t, []string{"poolSize", "idleConnections", "waitingRequests"}, keys(m["database"].(map[string]any)))
	require.ElementsMatch(t, []string{"rss", "heapTotal", "heapUsed", "external", "arrayBuffers"}, keys(m["memory"].(map[string]any)))
	require.ElementsMatch(t, []string{"user", "system"}, keys(m["cpu"].(map[string]any)))
}

func TestPrometheusExposition(t *testing.T) {
	fake := newFake()
	fake.stats = broker.Stats{PushRequests: 30, PushMessages: 300, PopRequests: 40, PopMessages: 200, AckRequests: 50,
		AckMessages: 150, AckSuccess: 140, AckFailed: 10, DLQMessages: 2, ParkedPops: 7, Queues: 2, Partitions: 9,
		OpenPartitions: 5, TotalLag: 123, SyncLatency: broker.LatencyHistogram{
			BoundsMicros: []int64{50, 250, 500, 1000000}, Counts: []uint64{1, 2, 3, 3}, Count: 4, SumMicros: 2000530}}
	ts := startServer(t, fake, Config{})
	// The request counters count every request of the route, whatever its outcome: one good and
	// two refused pushes, three pops of different shapes (one refused), two acks (one refused).
	ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","payload":1}]}`)
	ts.do("POST", "/api/v1/push", `{"items":[`)
	ts.do("POST", "/api/v1/push", `{"items":[{"queue":"a/b"}]}`)
	ts.do("GET", "/api/v1/pop/queue/q", "")
	ts.do("GET", "/api/v1/pop/queue/q/partition/p", "")
	ts.do("GET", "/api/v1/pop", "")
	ts.do("POST", "/api/v1/ack", "")
	ts.do("POST", "/api/v1/ack/batch", `{"acknowledgments":[]}`)
	r := ts.do("GET", "/metrics/prometheus", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", r.header.Get("Content-Type"))
	text := string(r.body)
	for _, line := range []string{
		`queen_cluster_push_requests_total{scope="cluster"} 3`,
		`queen_cluster_push_messages_total{scope="cluster"} 300`,
		`queen_cluster_pop_requests_total{scope="cluster"} 3`,
		`queen_cluster_pop_messages_total{scope="cluster"} 200`,
		`queen_cluster_ack_requests_total{scope="cluster"} 2`,
		`queen_cluster_ack_messages_total{scope="cluster"} 150`,
		`queen_cluster_ack_total{result="success",scope="cluster"} 140`,
		`queen_cluster_ack_total{result="failed",scope="cluster"} 10`,
		`queen_cluster_dlq_total{scope="cluster"} 2`,
		`comb_parked_pops 7`,
		`comb_total_lag_messages 123`,
		`comb_open_partitions 5`,
		`comb_queues 2`,
		`comb_partitions 9`,
		`# TYPE comb_sync_latency_seconds histogram`,
		`comb_sync_latency_seconds_bucket{le="5e-05"} 1`,
		`comb_sync_latency_seconds_bucket{le="0.00025"} 2`,
		`comb_sync_latency_seconds_bucket{le="0.0005"} 3`,
		`comb_sync_latency_seconds_bucket{le="1"} 3`,
		`comb_sync_latency_seconds_bucket{le="+Inf"} 4`,
		`comb_sync_latency_seconds_sum 2.00053`,
		`comb_sync_latency_seconds_count 4`,
	} {
		require.Contains(t, text, line+"\n")
	}
	// Every sample line is `name[{labels}] value`, every family has HELP and TYPE.
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			require.Regexp(t, `^# (HELP|TYPE) [a-z_]+ .+$`, line)
			continue
		}
		require.Regexp(t, `^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.e]+$`, line)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
