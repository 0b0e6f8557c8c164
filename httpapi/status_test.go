package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// statusClock is the broker's clock in these tests, so that "the current
// minute" is one the test chooses (the routes take explicit from/to).
type statusClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *statusClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *statusClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startStatusServer serves a real broker on dir with clock clk; stop closes
// both (the broker cleanly: its series are saved).
func startStatusServer(t *testing.T, dir string, clk *statusClock) (ts *testServer, stop func()) {
	t.Helper()
	ts, _, stop = serveReal(t, broker.Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop(), Now: clk.Now, MaintenanceInterval: -1})
	return ts, stop
}

func obj(t *testing.T, r response) map[string]any {
	t.Helper()
	require.Equal(t, 200, r.status, "%s", r.body)
	m, ok := r.json(t).(map[string]any)
	require.True(t, ok, "%s", r.body)
	return m
}

// seedStatus: queue q (retryLimit 0) with 5 messages on p1 and p2, 3 popped
// from p1 two seconds after the push, 2 acked completed and 1 failed (dead-lettered).
func seedStatus(t *testing.T, ts *testServer, clk *statusClock) {
	t.Helper()
	require.Equal(t, 200, ts.do("POST", "/api/v1/configure", `{"queue":"q","namespace":"shop","options":{"retryLimit":0}}`).status)
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"p1","transactionId":"a","payload":1},
	 {"queue":"q","partition":"p1","transactionId":"b","payload":2},{"queue":"q","partition":"p1","transactionId":"c","payload":3},
	 {"queue":"q","partition":"p2","transactionId":"d","payload":4},{"queue":"q","partition":"p2","transactionId":"e","payload":5}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	clk.Advance(2 * time.Second)
	pop := obj(t, ts.do("GET", "/api/v1/pop/queue/q/partition/p1?batch=3", ""))
	msgs := pop["messages"].([]any)
	require.Len(t, msgs, 3)
	pid, lease := msgs[0].(map[string]any)["partitionId"], pop["leaseId"]
	ack := fmt.Sprintf(`{"acknowledgments":[{"transactionId":"a","partitionId":%q,"leaseId":%q},{"transactionId":"b","partitionId":%q,"leaseId":%q},
	 {"transactionId":"c","partitionId":%q,"leaseId":%q,"status":"failed","error":"boom"}]}`, pid, lease, pid, lease, pid, lease)
	require.Equal(t, 200, ts.do("POST", "/api/v1/ack/batch", ack).status)
}

func isoQ(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// spec 8.7: push 5, pop 3 (2 s old), ack 2 + 1 failed: the current minute of
// /status/analytics, /status and /analytics/* shows exactly that, and after a
// restart it still does.
func TestStatusSeriesOverHTTPAndAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, stop := startStatusServer(t, dir, clk)
	seedStatus(t, ts, clk)
	minute := "2026-07-30T09:00:00Z"
	rng := "from=" + isoQ(clk.Now().Add(-10*time.Second)) + "&to=" + isoQ(clk.Now())

	check := func(ts *testServer, when string) {
		a := obj(t, ts.do("GET", "/api/v1/status/analytics?interval=minute&"+rng, ""))
		assert.Equal(t, "minute", a["interval"], when)
		pts := a["dataPoints"].([]any)
		require.Len(t, pts, 1, when)
		assert.Equal(t, map[string]any{"timestamp": minute, "messages": 5.0, "ingested": 5.0, "popped": 3.0, "processed": 2.0,
			"errors": 1.0, "avgLagMs": 2000.0, "maxLagMs": 2000.0}, pts[0], when)

		st := obj(t, ts.do("GET", "/api/v1/status?"+rng, ""))
		assert.Equal(t, 1.0, st["bucketMinutes"], when)
		assert.Equal(t, 1.0, st["pointCount"], when)
		tp := st["throughput"].([]any)[0].(map[string]any)
		assert.Equal(t, minute, tp["timestamp"], when)
		for k, v := range map[string]float64{"ingested": 5, "popMessages": 3, "processed": 2, "ackFailed": 1, "maxLagMs": 2000, "avgLagMs": 2000,
			"ingestedPerSecond": 0.08, "popPerSecond": 0.05, "processedPerSecond": 0.03} {
			assert.Equal(t, v, tp[k], "%s: throughput.%s", when, k)
		}
		msgs := st["messages"].(map[string]any)
		assert.Equal(t, 5.0, msgs["total"], when)
		assert.Equal(t, 3.0, msgs["completed"], when) // a, b and the dead-lettered c are past the cursor
		assert.Equal(t, 1.0, msgs["deadLetter"], when)
		assert.Equal(t, map[string]any{"totalMessages": 1.0, "affectedPartitions": 1.0, "topErrors": []any{}}, st["deadLetterQueue"], when)
		q0 := st["queues"].([]any)[0].(map[string]any)
		assert.Equal(t, "q", q0["name"], when)
		assert.Equal(t, 3.0, q0["totalConsumed"], when)
		assert.Len(t, st["workers"], 1, when)

		ops := obj(t, ts.do("GET", "/api/v1/analytics/queue-ops?"+rng, ""))
		row := ops["series"].([]any)[0].(map[string]any)
		assert.Equal(t, []any{"q"}, ops["queues"], when)
		for k, v := range map[string]any{"bucket": minute, "queueName": "q", "pushMessages": 5.0, "popMessages": 3.0, "ackSuccess": 2.0, "ackFailed": 1.0} {
			assert.Equal(t, v, row[k], "%s: queue-ops %s", when, k)
		}
		// queue-lag is a bare array, Queen's shape (spec 8.7).
		lag := ts.do("GET", "/api/v1/analytics/queue-lag?"+rng, "")
		require.Equal(t, 200, lag.status, when)
		assert.Equal(t, []any{map[string]any{"bucketTime": minute, "queueName": "q", "popCount": 3.0, "avgLagMs": 2000.0, "maxLagMs": 2000.0}}, lag.json(t), when)
		wm := obj(t, ts.do("GET", "/api/v1/analytics/worker-metrics?"+rng, ""))
		w0 := wm["timeSeries"].([]any)[0].(map[string]any)
		assert.Equal(t, 5.0, w0["pushMessages"], when)
		assert.Equal(t, 3.0, w0["popMessages"], when)
		// The failed ack of c (retryLimit 0) dead-lettered it in this minute.
		assert.Equal(t, 1.0, w0["dlqCount"], when)
		assert.Equal(t, 1.0, tp["dlqCount"], when)
	}
	check(ts, "live")

	// Another queue's filter sees nothing; the namespace's sees q.
	a := obj(t, ts.do("GET", "/api/v1/status/analytics?interval=minute&queue=other&"+rng, ""))
	assert.Equal(t, 0.0, a["dataPoints"].([]any)[0].(map[string]any)["ingested"])
	a = obj(t, ts.do("GET", "/api/v1/status/analytics?interval=minute&namespace=shop&"+rng, ""))
	assert.Equal(t, 5.0, a["dataPoints"].([]any)[0].(map[string]any)["ingested"])

	skipOnCluster(t, "the series are counted by the node that served the requests and saved in its own directory, "+
		"not replicated: after the cluster restarts another node may lead, and its series do not hold this minute")
	stop()
	ts, _ = startStatusServer(t, dir, clk)
	check(ts, "after a restart")
}

// spec 8.7: the queue routes' shapes, and 404 {"error":"Queue not found"}.
func TestStatusQueueRoutes(t *testing.T) {
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, _ := startStatusServer(t, t.TempDir(), clk)
	seedStatus(t, ts, clk)

	list := obj(t, ts.do("GET", "/api/v1/status/queues", ""))
	assert.Equal(t, map[string]any{"limit": 100.0, "offset": 0.0}, list["pagination"])
	q0 := list["queues"].([]any)[0].(map[string]any)
	assert.Equal(t, "q", q0["name"])
	assert.Equal(t, map[string]any{"total": 5.0, "pending": 2.0, "processing": 0.0}, q0["messages"])

	d := obj(t, ts.do("GET", "/api/v1/status/queues/q", ""))
	head := d["queue"].(map[string]any)
	assert.Equal(t, map[string]any{"leaseTime": 300.0, "retryLimit": 0.0, "retryDelay": 1000.0, "ttl": 3600.0, "maxQueueSize": 0.0, "deadLetterQueue": false}, head["config"])
	assert.Equal(t, "shop", head["namespace"])
	parts := map[string]map[string]any{}
	for _, p := range d["partitions"].([]any) {
		parts[p.(map[string]any)["name"].(string)] = p.(map[string]any)
	}
	assert.Equal(t, map[string]any{"totalConsumed": 3.0, "batchesConsumed": 0.0}, parts["p1"]["cursor"])
	assert.Equal(t, map[string]any{"total": 3.0, "pending": 0.0, "processing": 0.0, "completed": 3.0, "failed": 0.0, "deadLetter": 1.0}, parts["p1"]["stats"])
	assert.Equal(t, 1.0, d["totals"].(map[string]any)["deadLetter"])
	assert.Equal(t, 5.0, d["totals"].(map[string]any)["messages"].(map[string]any)["total"])

	r := ts.do("GET", "/api/v1/status/queues/nope", "")
	assert.Equal(t, 404, r.status)
	assert.JSONEq(t, `{"error":"Queue not found"}`, string(r.body))
	r = ts.do("GET", "/api/v1/status/queues/nope/messages", "")
	assert.Equal(t, 404, r.status)

	r = ts.do("GET", "/api/v1/status/queues/q/messages?limit=4", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	rows := r.json(t).([]any)
	require.Len(t, rows, 4)
	byTx := map[string]string{}
	for _, x := range rows {
		m := x.(map[string]any)
		byTx[m["transactionId"].(string)] = m["status"].(string)
		assert.Equal(t, "q/"+m["partition"].(string), m["queuePath"])
	}
	assert.Equal(t, "pending", byTx["d"])
	assert.Equal(t, "completed", byTx["c"])

	buf := obj(t, ts.do("GET", "/api/v1/status/buffers", ""))
	assert.Equal(t, 0.0, buf["pending"])
	assert.Equal(t, true, buf["dbHealthy"])
}

// spec 8.7, 8.10: every chart route answers an object; PostgreSQL-only routes 501.
func TestAnalyticsRoutesAndNotSupported(t *testing.T) {
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, _ := startStatusServer(t, t.TempDir(), clk)
	for path, arrays := range map[string][]string{
		"worker-metrics": {"timeSeries", "workers"}, "system-metrics": {"replicas"}, "queue-ops": {"series", "queues"},
		"retention": {"series"}, "queue-parked-replicas": {"series", "replicas"},
	} {
		m := obj(t, ts.do("GET", "/api/v1/analytics/"+path, ""))
		assert.Contains(t, m, "timeRange", path)
		assert.Equal(t, 1.0, m["bucketMinutes"], path)
		for _, a := range arrays {
			assert.IsType(t, []any{}, m[a], "%s.%s", path, a)
		}
	}
	lag := ts.do("GET", "/api/v1/analytics/queue-lag", "")
	require.Equal(t, 200, lag.status)
	assert.JSONEq(t, `[]`, string(lag.body), "queue-lag with no pops is an empty bare array")
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/analytics/postgres-stats"}, {"GET", "/api/v1/migration/status"}, {"POST", "/api/v1/migration/start"},
	} {
		r := ts.do(c.method, c.path, "")
		assert.Equal(t, 501, r.status, c.path)
		assert.JSONEq(t, `{"error":"Not supported"}`, string(r.body), c.path)
	}
}

// spec 8.3: the per-queue families show the newest closed minute; DLQ depth
// by queue and for the cluster; the checkpoint histogram is there.
func TestPrometheusQueueFamilies(t *testing.T) {
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, _ := startStatusServer(t, t.TempDir(), clk)
	seedStatus(t, ts, clk)
	ts.awaitApplied()
	r := ts.do("GET", "/metrics/prometheus", "")
	require.Equal(t, 200, r.status)
	body := string(r.body)
	for _, line := range []string{
		`queen_queue_push_messages_per_minute{queue="q"} 0`, // the minute is still open
		`queen_dlq_depth_by_queue{queue="q"} 1`,
		`queen_dlq_depth{scope="cluster"} 1`,
		`# TYPE comb_checkpoint_latency_seconds histogram`,
		`comb_segment_logs_unlisted 0`,
		// The group's lag is over the partitions it has a cursor on (ConsumerGroups): p1, all consumed.
		`comb_consumer_group_lag_messages{consumer_group="__QUEUE_MODE__",queue="q"} 0`,
	} {
		assert.Contains(t, body, line+"\n")
	}

}

// A from or to that is not ISO-8601 is a 400 on every status and chart route,
// as on GET /api/v1/messages, not the default window in silence.
func TestStatusRoutesRefuseBadTimestamps(t *testing.T) {
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, _ := startStatusServer(t, t.TempDir(), clk)
	for _, path := range []string{"/api/v1/status?from=garbage", "/api/v1/status/analytics?to=x",
		"/api/v1/analytics/queue-ops?from=bad", "/api/v1/analytics/retention?from=bad", "/api/v1/status/queues?from=notadate"} {
		key := "from"
		if strings.Contains(path, "?to=") {
			key = "to"
		}
		expectJSON(t, ts.do("GET", path, ""), 400, `{"error":"Invalid `+key+` timestamp: must be ISO-8601"}`)
	}
	m := obj(t, ts.do("GET", "/api/v1/status?from=2026-07-30T08:00:00Z", ""))
	assert.Contains(t, m, "timeRange")
}
