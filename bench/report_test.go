package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentilesOf(t *testing.T) {
	cases := []struct {
		name   string
		values []int64 // µs
		want   Percentiles
	}{
		{
			name:   "1..1000 µs uniform: quantiles are exact below the histogram's 2048-value linear range",
			values: seq(1, 1000),
			want:   Percentiles{Count: 1000, P50: 0.5, P90: 0.9, P99: 0.99, P999: 0.999, Max: 1.0},
		},
		{
			name:   "one slow outlier shows in max and p99.9 only",
			values: append(repeat(100, 999), 50_000),
			want:   Percentiles{Count: 1000, P50: 0.1, P90: 0.1, P99: 0.1, P999: 0.1, Max: 50.0},
		},
		{
			name:   "empty histogram reads as zeros",
			values: nil,
			want:   Percentiles{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHist()
			for _, v := range tc.values {
				require.NoError(t, h.RecordValue(v))
			}
			got := PercentilesOf(h)
			assert.Equal(t, tc.want.Count, got.Count)
			assert.InDelta(t, tc.want.P50, got.P50, 1e-9)
			assert.InDelta(t, tc.want.P90, got.P90, 1e-9)
			assert.InDelta(t, tc.want.P99, got.P99, 1e-9)
			assert.InDelta(t, tc.want.P999, got.P999, 1e-9)
			// Max reports the top of the value's bucket: equal within the 0.1 % resolution.
			assert.InDelta(t, tc.want.Max, got.Max, tc.want.Max*0.001)
		})
	}
	assert.Equal(t, Percentiles{}, PercentilesOf(nil), "nil histogram")
}

func TestRate(t *testing.T) {
	cases := []struct {
		name string
		n    int64
		d    time.Duration
		want float64
	}{
		{"events over seconds", 1_000_000, 4 * time.Second, 250_000},
		{"sub-second window scales up", 500, 250 * time.Millisecond, 2000},
		{"empty window is zero, not Inf", 10, 0, 0},
		{"negative window is zero", 10, -time.Second, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, Rate(tc.n, tc.d), 1e-9)
		})
	}
}

func TestWorkerStatsRecordsOnlyInsideTheWindow(t *testing.T) {
	st := NewStats()
	ws := st.Worker()
	ws.Request(OpPush, 5*time.Millisecond) // warmup: counted, not recorded
	st.measuring.Store(true)
	ws.Request(OpPush, 2*time.Millisecond)
	ws.Request(OpPush, 4*time.Millisecond)
	ws.EndToEnd("", 7*time.Millisecond)
	st.measuring.Store(false)
	ws.Request(OpPush, 9*time.Millisecond)
	ws.Flush()

	assert.Equal(t, int64(4), st.Snapshot().Requests)
	p := PercentilesOf(st.Hist(string(OpPush)))
	assert.Equal(t, int64(2), p.Count)
	assert.InDelta(t, 4.0, p.Max, 0.004)
	assert.Equal(t, int64(1), st.Hist("e2e").TotalCount())
	assert.Equal(t, []string{"e2e", "push"}, st.HistNames())
}

func TestErrorKind(t *testing.T) {
	assert.Equal(t, "http_503", ErrorKind(&StatusError{Op: OpPush, Status: 503}))
	assert.Equal(t, "bad_response", ErrorKind(ErrBadResponse))
	assert.Equal(t, "other", ErrorKind(ErrConfig))
}

func TestMarkdownTableRatiosAgainstComb(t *testing.T) {
	res := []Result{
		{Workload: WorkloadPush, Driver: DriverComb, MsgPerSec: 900_000, MBPerSec: 180},
		{Workload: WorkloadPush, Driver: DriverRedis, Variant: "appendfsync always", MsgPerSec: 300_000},
		{Workload: WorkloadConsume, Driver: DriverNATS, MsgPerSec: 100_000},
	}
	table := MarkdownTable(res)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 5)
	assert.Contains(t, lines[2], "| push | comb | 900000 | 180.0 | 1.00× |")
	assert.Contains(t, lines[3], "| push | redis (appendfsync always) | 300000 |")
	assert.Contains(t, lines[3], "| 3.00× |")
	assert.Contains(t, lines[4], "| consume | nats | 100000 |")
	assert.Contains(t, lines[4], "| n/a |", "no comb row for the workload: no ratio")
}

func seq(from, to int64) []int64 {
	out := make([]int64, 0, to-from+1)
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
