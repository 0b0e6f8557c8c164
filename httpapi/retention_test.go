package httpapi

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// manualClock is a broker clock the test moves by hand, so "wait 15 s" takes
// no time.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startBrokerServer serves a real broker opened with cfg (DataDir, Sync and
// Logger filled in) on a loopback port.
func startBrokerServer(t *testing.T, cfg broker.Config) *testServer {
	t.Helper()
	cfg.DataDir, cfg.Sync, cfg.Logger = t.TempDir(), "never", zerolog.Nop()
	ts, _, _ := serveReal(t, cfg)
	return ts
}

// pushOneByOne pushes n messages to queue, one request each, as Queen's JS
// retention tests do (`push([{ data: { message: i } }])` in a loop: no
// partition, so "Default").
func pushOneByOne(ts *testServer, queue string, n int) {
	ts.t.Helper()
	for i := range n {
		r := ts.do("POST", "/api/v1/push", fmt.Sprintf(`{"items":[{"queue":%q,"payload":{"message":%d}}]}`, queue, i))
		require.Equal(ts.t, 201, r.status, "%s", r.body)
	}
}

// Queen's clients/client-js/test-v2/retention.js, retentionTest and
// retentionTestMaxTime, over HTTP against the real broker: configure, push
// 100 messages one by one, wait 15 s, pop 100 with wait=false: nothing (204).
// The waits are on the broker's clock; the messages stay in the partition's
// active file, so only the read-time filter can pass these (spec 2.2). The
// other cases are the variants the acceptance check and Queen's eviction
// service imply, and the controls that must still deliver.
func TestQueenJSRetentionScenarios(t *testing.T) {
	cases := []struct {
		name    string
		options string
		wait    time.Duration
		want    int // pop status
	}{
		{"retentionTest", `{"retentionEnabled":true,"retentionSeconds":10,"completedRetentionSeconds":5}`, 15 * time.Second, 204},
		{"retentionTestMaxTime", `{"retentionEnabled":true,"maxWaitTimeSeconds":10}`, 15 * time.Second, 204},
		{"maxWaitTimeSeconds without retentionEnabled", `{"maxWaitTimeSeconds":2}`, 5 * time.Second, 204},
		{"retentionSeconds without retentionEnabled keeps everything", `{"retentionSeconds":2}`, 5 * time.Second, 200},
		{"before the horizon everything is delivered", `{"retentionEnabled":true,"retentionSeconds":10}`, 9 * time.Second, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &manualClock{t: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)}
			ts := startBrokerServer(t, broker.Config{Now: clk.Now})
			r := ts.do("POST", "/api/v1/configure", `{"queue":"test-queue-retention","options":`+tc.options+`}`)
			require.Equal(t, 200, r.status, "%s", r.body)
			pushOneByOne(ts, "test-queue-retention", 100)
			clk.Advance(tc.wait)
			r = ts.do("GET", "/api/v1/pop/queue/test-queue-retention?batch=100&wait=false", "")
			require.Equal(t, tc.want, r.status, "%s", r.body)
			if tc.want == 200 {
				require.Len(t, r.json(t).(map[string]any)["messages"], 100)
			} else {
				require.Empty(t, r.body)
			}
		})
	}
}

// The same scenario on the wall clock, with Queen's test set-up
// (RETENTION_INTERVAL short) and a 1 s retention: the sweep alone makes the
// queue's counts drop to zero (polled with a deadline), and then a pop, a
// group pop and a long-poll all find nothing.
func TestRetentionOnTheWallClock(t *testing.T) {
	ts := startBrokerServer(t, broker.Config{MaintenanceInterval: 50 * time.Millisecond,
		RetentionInterval: 50 * time.Millisecond, EvictionInterval: 50 * time.Millisecond})
	r := ts.do("POST", "/api/v1/configure", `{"queue":"wall","options":{"retentionEnabled":true,"retentionSeconds":1}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	pushOneByOne(ts, "wall", 10)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = ts.do("GET", "/api/v1/resources/queues/wall", "")
		require.Equal(t, 200, r.status, "%s", r.body)
		total := r.json(t).(map[string]any)["totals"].(map[string]any)["total"]
		if total == float64(0) {
			break
		}
		require.True(t, time.Now().Before(deadline), "still %v messages counted after 10 s", total)
		time.Sleep(20 * time.Millisecond) // polling the broker's state, with the deadline above
	}
	for _, path := range []string{
		"/api/v1/pop/queue/wall?batch=100&wait=false",
		"/api/v1/pop/queue/wall?batch=100&wait=false&consumerGroup=g",
		"/api/v1/pop/queue/wall?batch=100&wait=true&timeout=50",
	} {
		r = ts.do("GET", path, "")
		require.Equal(t, 204, r.status, "%s: %s", path, r.body)
	}
}
