package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An excerpt of comb's /metrics/prometheus (httpapi/prometheus.go).
const combExposition = `# HELP queen_cluster_push_requests_total POST /api/v1/push requests received.
# TYPE queen_cluster_push_requests_total counter
queen_cluster_push_requests_total{scope="cluster"} 1234
# HELP comb_sync_latency_seconds Durations of group-commit syncs.
# TYPE comb_sync_latency_seconds histogram
comb_sync_latency_seconds_bucket{le="5e-05"} 3
comb_sync_latency_seconds_bucket{le="+Inf"} 977
comb_sync_latency_seconds_sum 0.193
comb_sync_latency_seconds_count 977
comb_sync_latency_seconds_count_extra 5
`

func TestPromSample(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		series string
		want   float64
		found  bool
	}{
		{"a bare name", combExposition, "comb_sync_latency_seconds_count", 977, true},
		{"a name with its labels as exposed", combExposition, `queen_cluster_push_requests_total{scope="cluster"}`, 1234, true},
		{"a labelled series is not its bare name", combExposition, "queen_cluster_push_requests_total", 0, false},
		{"a longer name sharing the prefix is another series", "comb_sync_latency_seconds_count_extra 5\n", "comb_sync_latency_seconds_count", 0, false},
		{"comments never match", "# comb_x 5\n", "# comb_x", 0, false},
		{"a timestamp after the value", "comb_x 42 1764374400000\n", "comb_x", 42, true},
		{"exponent syntax", "comb_x 1.5e+06\n", "comb_x", 1.5e6, true},
		{"+Inf", "comb_x +Inf\n", "comb_x", math.Inf(1), true},
		{"NaN reads as absent", "comb_x NaN\n", "comb_x", 0, false},
		{"garbage value", "comb_x lots\n", "comb_x", 0, false},
		{"name without a value", "comb_x\n", "comb_x", 0, false},
		{"empty series", combExposition, "", 0, false},
		{"CRLF line ends", "comb_x 7\r\n", "comb_x", 7, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := promSample([]byte(tc.body), tc.series)
			assert.Equal(t, tc.found, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The sample reader takes a server's bytes: it must never panic, and what it finds must be
// on a line that starts with the series.
func FuzzPromSample(f *testing.F) {
	f.Add([]byte(combExposition), "comb_sync_latency_seconds_count")
	f.Add([]byte("comb_x 1 2 3\n"), "comb_x")
	f.Add([]byte("x\x00 1\n"), "x\x00")
	f.Fuzz(func(t *testing.T, body []byte, series string) {
		v, ok := promSample(body, series)
		if !ok {
			return
		}
		if math.IsNaN(v) {
			t.Fatalf("NaN reported as found")
		}
		if series == "" || !strings.Contains(string(body), series) {
			t.Fatalf("found %v for series %q absent from the body", v, series)
		}
	})
}

// fakeMetrics serves /metrics/prometheus with one counter the test sets.
type fakeMetrics struct {
	syncs  atomic.Int64
	scrape atomic.Int64 // how many times it was read
	mu     sync.Mutex
	auth   []string
	status int
}

func (f *fakeMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.scrape.Add(1)
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	status := f.status
	f.mu.Unlock()
	if r.URL.Path != "/metrics/prometheus" {
		http.NotFound(w, r)
		return
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	fmt.Fprintf(w, "# TYPE comb_sync_latency_seconds histogram\ncomb_sync_latency_seconds_count %d\n", f.syncs.Load())
}

func TestScrapeSample(t *testing.T) {
	f := &fakeMetrics{}
	f.syncs.Store(31)
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()

	v, err := ScrapeSample(ctx, srv.Client(), srv.URL+"/", "tok", DefaultSyncMetric)
	require.NoError(t, err)
	assert.Equal(t, 31.0, v)
	assert.Equal(t, []string{"Bearer tok"}, f.auth, "the token goes along (JWT_SKIP_PATHS may not list the metrics)")

	_, err = ScrapeSample(ctx, srv.Client(), srv.URL, "", "comb_absent_total")
	require.ErrorIs(t, err, ErrBadResponse)

	f.mu.Lock()
	f.status = http.StatusUnauthorized
	f.mu.Unlock()
	_, err = ScrapeSample(ctx, srv.Client(), srv.URL, "", DefaultSyncMetric)
	require.ErrorIs(t, err, ErrHTTPStatus)
}

// Syncs per request is the sync counter's growth over the window divided by the window's
// requests; a server without the counter gets no figure rather than 0.
func TestProbeSyncsPerRequest(t *testing.T) {
	f := &fakeMetrics{}
	f.syncs.Store(1000)
	srv := httptest.NewServer(f)
	defer srv.Close()
	cfg := DefaultConfig()
	ctx := context.Background()

	p := newProbe(cfg, 0, srv.URL)
	p.open(ctx)
	f.syncs.Add(7)
	var res Result
	p.close(ctx, &res, 14)
	require.NotNil(t, res.ServerSyncs)
	assert.Equal(t, int64(7), *res.ServerSyncs)
	require.NotNil(t, res.ServerSyncsPerRequest)
	assert.Equal(t, 0.5, *res.ServerSyncsPerRequest)
	assert.Equal(t, DefaultSyncMetric, res.SyncMetric)
	assert.Zero(t, res.ServerPID, "no server process given, no server figures")

	cfg.SyncMetric = "comb_absent_total"
	p = newProbe(cfg, 0, srv.URL)
	p.open(ctx)
	res = Result{}
	p.close(ctx, &res, 14)
	assert.Nil(t, res.ServerSyncs)
	assert.Nil(t, res.ServerSyncsPerRequest)
	assert.Empty(t, res.SyncMetric)

	p = newProbe(DefaultConfig(), 0, "") // a peer (redis, nats): nothing to scrape
	p.open(ctx)
	res = Result{}
	p.close(ctx, &res, 14)
	assert.Nil(t, res.ServerSyncs)
}

// Old comb servers (c473ac3 and before) lost sync counts past 4,096 between two reads of
// their stats, so the probe reads the counter during the window too.
func TestProbeScrapesDuringTheWindow(t *testing.T) {
	f := &fakeMetrics{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := newProbe(DefaultConfig(), 0, srv.URL)
	p.open(context.Background())
	require.Eventually(t, func() bool { return f.scrape.Load() >= 3 }, 10*time.Second, 10*time.Millisecond,
		"the opening read, then reads every %v while the window is open", syncScrapeEvery)
	var res Result
	p.close(context.Background(), &res, 1)
	require.NotNil(t, res.ServerSyncs)
}
