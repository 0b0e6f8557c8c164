package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 14: the two binaries alternate A B, B A, ... so a steady drift of the box's load
// weighs on each side in both slots.
func TestRoundOrderAlternatesWhoGoesFirst(t *testing.T) {
	want := [][2]Side{{Baseline, Candidate}, {Candidate, Baseline}, {Baseline, Candidate}, {Candidate, Baseline}}
	for r, w := range want {
		assert.Equal(t, w, RoundOrder(r), "round %d", r)
	}
}

// fakeRuns is a RunFunc that answers from a table and records the order of its calls.
type fakeRuns struct {
	calls   []string
	results map[string]*Result // "baseline 1" → report
	fail    string             // the call that fails
}

var errFakeRun = errors.New("fake run failed")

func (f *fakeRuns) run(_ context.Context, side Side, round int) (*Result, error) {
	key := fmt.Sprintf("%s %d", side, round)
	f.calls = append(f.calls, key)
	if key == f.fail {
		return nil, errFakeRun
	}
	if r := f.results[key]; r != nil {
		return r, nil
	}
	return &Result{Workload: WorkloadPush, MsgPerSec: 1}, nil
}

func TestCompareRunsBothSidesEveryRoundInterleaved(t *testing.T) {
	f := &fakeRuns{}
	var seen []string
	runs, err := Compare(context.Background(), 3, f.run, func(r CompareRun) {
		seen = append(seen, fmt.Sprintf("%s %d", r.Side, r.Round))
	})
	require.NoError(t, err)
	want := []string{"baseline 1", "candidate 1", "candidate 2", "baseline 2", "baseline 3", "candidate 3"}
	assert.Equal(t, want, f.calls, "A B, B A, A B")
	assert.Equal(t, want, seen, "onRun sees each run as it ends, in order")
	require.Len(t, runs, 6)
	for i, r := range runs {
		assert.Equal(t, want[i], fmt.Sprintf("%s %d", r.Side, r.Round))
		assert.NotNil(t, r.Result)
	}
}

func TestCompareStopsAtTheFirstFailedRun(t *testing.T) {
	f := &fakeRuns{fail: "baseline 2"}
	runs, err := Compare(context.Background(), 3, f.run, nil)
	require.ErrorIs(t, err, errFakeRun)
	assert.Contains(t, err.Error(), "round 2 baseline")
	assert.Equal(t, []string{"baseline 1", "candidate 1", "candidate 2", "baseline 2"}, f.calls, "nothing runs after the failure")
	assert.Len(t, runs, 3, "the runs before the failure are kept")
}

func TestCompareStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeRuns{}
	runs, err := Compare(ctx, 3, func(ctx context.Context, side Side, round int) (*Result, error) {
		cancel() // the user hits Ctrl-C during the first run
		return f.run(ctx, side, round)
	}, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"baseline 1"}, f.calls)
	assert.Len(t, runs, 1)
}

func TestCompareNeedsARound(t *testing.T) {
	_, err := Compare(context.Background(), 0, (&fakeRuns{}).run, nil)
	require.ErrorIs(t, err, ErrConfig)
}

func TestMedian(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none is zero", nil, 0},
		{"one value", []float64{1.7}, 1.7},
		{"odd count: the middle after sorting", []float64{3, 1, 2}, 2},
		{"even count: the mean of the two middle values", []float64{4, 1, 3, 2}, 2.5},
		{"an outlier does not move it", []float64{1, 1.1, 1.2, 1.3, 90}, 1.2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			assert.InDelta(t, tc.want, Median(tc.xs), 1e-12)
			assert.Equal(t, in, tc.xs, "the input is not reordered")
		})
	}
}

// pushResult is a push report with the figures Summarize reads.
func pushResult(msgPerSec, p99, cpuPerReq float64, syncsPerReq *float64) *Result {
	return &Result{
		Workload: WorkloadPush, MsgPerSec: msgPerSec,
		LatencyMs: Percentiles{Count: 10, P50: p99 / 2, P99: p99},
		ServerPID: 7, ServerCPUMicrosPerRequest: cpuPerReq, ServerSyncsPerRequest: syncsPerReq,
	}
}

func ptr(v float64) *float64 { return &v }

func TestSummarizePairsRoundsAndTakesTheMedianRatio(t *testing.T) {
	runs := []CompareRun{
		{1, Baseline, pushResult(100, 10, 500, ptr(1.0))},
		{1, Candidate, pushResult(150, 5, 250, ptr(0.1))},
		// Round 2 ran candidate first: pairing is by round, not by position.
		{2, Candidate, pushResult(200, 10, 200, ptr(0.05))},
		{2, Baseline, pushResult(200, 10, 400, ptr(0.9))},
		{3, Baseline, pushResult(400, 20, 600, ptr(1.0))},
		{3, Candidate, pushResult(200, 40, 150, ptr(0.1))},
	}
	got := map[string]MetricRatio{}
	var order []string
	for _, m := range Summarize(runs) {
		got[m.Metric] = m
		order = append(order, m.Metric)
	}
	assert.Equal(t, []string{"msg/s", "request p50 ms", "request p99 ms", "server CPU µs/request", "server syncs/request"}, order,
		"CompareMetrics order; push has no push-beside-consume rate and no e2e latency")

	rate := got["msg/s"]
	assert.True(t, rate.HigherIsBetter)
	assert.InDeltaSlice(t, []float64{1.5, 1.0, 0.5}, rate.Ratios, 1e-12)
	assert.InDelta(t, 1.0, rate.Median, 1e-12)
	assert.InDelta(t, 0.5, rate.Min, 1e-12)
	assert.InDelta(t, 1.5, rate.Max, 1e-12)
	assert.InDelta(t, 200, rate.Baseline, 1e-12, "median of 100, 200, 400")
	assert.InDelta(t, 200, rate.Candidate, 1e-12, "median of 150, 200, 200")

	p99 := got["request p99 ms"]
	assert.False(t, p99.HigherIsBetter)
	assert.InDeltaSlice(t, []float64{0.5, 1.0, 2.0}, p99.Ratios, 1e-12)
	assert.InDelta(t, 1.0, p99.Median, 1e-12)

	cpu := got["server CPU µs/request"]
	assert.InDeltaSlice(t, []float64{0.5, 0.5, 0.25}, cpu.Ratios, 1e-12)
	assert.InDelta(t, 0.5, cpu.Median, 1e-12)

	syncs := got["server syncs/request"]
	assert.InDeltaSlice(t, []float64{0.1, 0.05 / 0.9, 0.1}, syncs.Ratios, 1e-12)
	assert.InDelta(t, 0.1, syncs.Median, 1e-12)
	assert.InDelta(t, 1.0, syncs.Baseline, 1e-12)
}

func TestSummarizeLeavesOutRoundsWithoutTheFigure(t *testing.T) {
	noServer := &Result{Workload: WorkloadPush, MsgPerSec: 300, LatencyMs: Percentiles{Count: 1, P50: 1, P99: 2}}
	runs := []CompareRun{
		{1, Baseline, pushResult(100, 10, 500, nil)}, // a server without the sync counter
		{1, Candidate, pushResult(120, 10, 400, ptr(0.1))},
		{2, Baseline, noServer}, // its process was not found: no CPU figure
		{2, Candidate, pushResult(360, 10, 300, ptr(0.1))},
		{3, Baseline, pushResult(0, 10, 500, ptr(1))}, // a baseline rate of 0 has no ratio
		{3, Candidate, pushResult(50, 10, 500, ptr(0.5))},
		{4, Baseline, pushResult(100, 10, 500, ptr(1))}, // the candidate of round 4 never ran
	}
	got := map[string]MetricRatio{}
	for _, m := range Summarize(runs) {
		got[m.Metric] = m
	}
	assert.InDeltaSlice(t, []float64{1.2, 1.2}, got["msg/s"].Ratios, 1e-12, "rounds 1 and 2")
	assert.InDeltaSlice(t, []float64{0.8, 1.0}, got["server CPU µs/request"].Ratios, 1e-12, "rounds 1 and 3")
	assert.InDeltaSlice(t, []float64{0.5}, got["server syncs/request"].Ratios, 1e-12, "round 3 only")
	assert.Empty(t, Summarize(runs[6:]), "no complete round, no ratios")
}

func TestSummarizeMixedWorkloadsReportPushRateAndEndToEnd(t *testing.T) {
	e2e := func(rate, push, p99, pushP99 float64) *Result {
		pop := Percentiles{Count: 1, P50: 1, P99: 100}
		return &Result{Workload: WorkloadE2E, MsgPerSec: rate, PushMsgPerSec: push,
			LatencyMs:        pop,
			RequestLatencyMs: map[string]Percentiles{string(OpPop): pop, string(OpPush): {Count: 3, P50: 1, P99: pushP99}},
			E2ELatencyMs:     &Percentiles{Count: 5, P50: p99 / 4, P99: p99}}
	}
	runs := []CompareRun{{1, Baseline, e2e(100, 100, 80, 40)}, {1, Candidate, e2e(100, 100, 8, 10)}}
	got := map[string]MetricRatio{}
	for _, m := range Summarize(runs) {
		got[m.Metric] = m
	}
	assert.InDelta(t, 1.0, got["push msg/s"].Median, 1e-12)
	assert.InDelta(t, 0.1, got["e2e p99 ms"].Median, 1e-12)
	assert.InDelta(t, 0.1, got["e2e p50 ms"].Median, 1e-12)
	// The main request of e2e is the pop (a long-poll, its wait included): the pushes' p99 is
	// reported beside it, not in its place.
	assert.InDelta(t, 100, got["request p99 ms"].Baseline, 1e-12)
	push := got["push request p99 ms"]
	assert.InDelta(t, 40, push.Baseline, 1e-12)
	assert.InDelta(t, 10, push.Candidate, 1e-12)
	assert.InDelta(t, 0.25, push.Median, 1e-12)
	assert.False(t, push.HigherIsBetter)

	var text bytes.Buffer
	WriteRun(&text, runs[0])
	assert.Equal(t, strings.Fields("1 baseline 100 1.00 100.00 40.00 80.00 - - n/a 0 - -"), strings.Fields(text.String()),
		"the run line: pop p50 and p99, then the push p99, then e2e p99")
}

func TestComparisonTextAndJSON(t *testing.T) {
	la := LoadAvg{One: 2.5, Five: 2, Fifteen: 1}
	base := pushResult(100_000, 10, 500, ptr(1))
	base.LoadAvg, base.HostCPUPercent, base.ServerCPUPercent, base.ClientCPUPercent = &la, 190, 100, 60
	cand := pushResult(250_000, 5, 150, ptr(0.05))
	cand.LoadAvg = &la
	runs := []CompareRun{{1, Baseline, base}, {1, Candidate, cand}}
	c := &Comparison{Workload: WorkloadPush, Baseline: Binary{Path: "/old/comb", SHA256: "0123456789abcdef"},
		Candidate: Binary{Path: "/new/comb"}, Serve: []string{"--sync", "always"}, DataRoot: "/var/tmp", SyncMetric: DefaultSyncMetric, Rounds: 1,
		Runs: runs, Ratios: Summarize(runs)}

	var text bytes.Buffer
	c.WriteHeader(&text)
	for _, r := range runs {
		WriteRun(&text, r)
	}
	c.WriteSummary(&text)
	out := text.String()
	assert.Contains(t, out, "baseline   /old/comb (sha256 0123456789ab)")
	assert.Contains(t, out, "serve      --sync always, a fresh data directory under /var/tmp")
	assert.Contains(t, out, "syncs/req  growth of the server's comb_sync_latency_seconds_count over the window, per request")
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 9)
	assert.Equal(t, strings.Fields("1 baseline 100000 5.00 10.00 - - 100% 500 1.000 0 30% 2.50"), strings.Fields(lines[6]),
		"others = host 190 − server 100 − client 60")
	assert.Contains(t, out, "msg/s                    2.50×  (2.50–2.50, 1 rounds)  100000 → 250000  higher is better")
	assert.Contains(t, out, "server syncs/request     0.05×  (0.05–0.05, 1 rounds)  1.000 → 0.050  lower is better")

	var js bytes.Buffer
	require.NoError(t, c.WriteJSON(&js))
	var back Comparison
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, Candidate, back.Runs[1].Side, "sides round-trip by name")
	assert.Contains(t, js.String(), `"side":"baseline"`)
	assert.Equal(t, c.Ratios, back.Ratios)
}

// Issue 23's cluster shape: a cluster run carries its single-node run of the same binary, and
// the summary divides each side's cluster÷one-node ratios by the other side's, besides the
// medians of each side (the figures the targets are about).
func TestSummarizeClusterRunsReportTheirOneNodeRatios(t *testing.T) {
	cluster := func(rate, leaderCPU, followersCPU, oneRate, oneCPU float64) *Result {
		r := pushResult(rate, 10, leaderCPU, nil)
		r.FollowerPIDs, r.FollowerCPUPercent, r.FollowerCPUMicrosPerRequest = []int{8, 9}, 90, followersCPU
		r.ClusterNodes, r.SingleNode = 3, pushResult(oneRate, 5, oneCPU, ptr(0.1))
		r.ClusterRate, r.ClusterLeaderCPU = rate/oneRate, leaderCPU/oneCPU
		return r
	}
	runs := []CompareRun{
		{1, Baseline, cluster(100, 600, 500, 250, 400)},
		{1, Candidate, cluster(180, 480, 300, 300, 400)},
	}
	got := map[string]MetricRatio{}
	for _, m := range Summarize(runs) {
		got[m.Metric] = m
	}
	rate := got["cluster ÷ one node msg/s"]
	assert.InDelta(t, 0.4, rate.Baseline, 1e-12)
	assert.InDelta(t, 0.6, rate.Candidate, 1e-12)
	assert.True(t, rate.HigherIsBetter)
	cpu := got["leader ÷ one node CPU/req"]
	assert.InDelta(t, 1.5, cpu.Baseline, 1e-12)
	assert.InDelta(t, 1.2, cpu.Candidate, 1e-12)
	assert.InDelta(t, 0.8, cpu.Median, 1e-12)
	assert.False(t, cpu.HigherIsBetter)
	assert.InDelta(t, 300.0/500, got["followers CPU µs/request"].Median, 1e-12)
	assert.InDelta(t, 250, got["one node msg/s"].Baseline, 1e-12)
	assert.InDelta(t, 400, got["one node CPU µs/request"].Candidate, 1e-12)
	assert.InDelta(t, 480.0/600, got["server CPU µs/request"].Median, 1e-12, "the leader's CPU")
	assert.NotContains(t, got, "server syncs/request", "the cluster run exposes no sync counter here")

	var text bytes.Buffer
	WriteRun(&text, runs[0])
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, 2, "a cluster run prints its one-node figures on a second line")
	assert.Equal(t, "3 nodes: followers' CPU 90% = 500 µs/req; one node 250 msg/s, 400 µs/req (load -); cluster ÷ one node: msg/s 0.40×, leader CPU 1.50×",
		strings.TrimSpace(lines[1]))
	assert.InDelta(t, 0, (&Result{HostCPUPercent: 150, ServerCPUPercent: 60, FollowerCPUPercent: 90}).OthersCPUPercent(), 1e-12,
		"the followers are not others")
}
