package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// A same-round comparison (issue 14, "interleaved with the previous release's binary in the
// same runs"): on a box shared with other work the load moves a figure by up to 2× within
// minutes, so two binaries are only comparable when their runs alternate inside one session
// and each candidate figure is divided by the baseline figure of the same round.

// Side is one of the two servers of a comparison.
type Side int

const (
	// Baseline is the reference binary, typically the previous release.
	Baseline Side = iota
	// Candidate is the binary under test; ratios are candidate ÷ baseline.
	Candidate
)

func (s Side) String() string {
	if s == Candidate {
		return "candidate"
	}
	return "baseline"
}

// MarshalText writes the side's name, so JSON reports read "baseline" / "candidate".
func (s Side) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a side's name.
func (s *Side) UnmarshalText(b []byte) error {
	switch string(b) {
	case "baseline":
		*s = Baseline
	case "candidate":
		*s = Candidate
	default:
		return fmt.Errorf("side %q (want baseline|candidate): %w", b, ErrBadResponse)
	}
	return nil
}

// RoundOrder is the order in which round r (0-based) runs the two sides: baseline first in
// even rounds, candidate first in odd ones (A B, B A, A B, ...). A load that rises or falls
// steadily over the session then weighs on each side as often in the first slot as in the
// second, and the per-round ratios cancel it out instead of crediting it to one binary.
func RoundOrder(r int) [2]Side {
	if r%2 == 1 {
		return [2]Side{Candidate, Baseline}
	}
	return [2]Side{Baseline, Candidate}
}

// RunFunc performs one measured run of side in round (1-based) and returns its report; each
// call is expected to start from a fresh server so no run inherits another's data.
type RunFunc func(ctx context.Context, side Side, round int) (*Result, error)

// CompareRun is one run of a comparison.
type CompareRun struct {
	Round  int     `json:"round"` // 1-based
	Side   Side    `json:"side"`
	Result *Result `json:"result"`
}

// Compare runs rounds rounds of both sides in RoundOrder and returns every run in the order
// they ran. onRun, when not nil, sees each run as soon as it ends (for a live report). It stops
// at the first failed run or when ctx ends, returning the runs so far and an error that names
// the round and side; rounds must be at least 1 (ErrConfig).
func Compare(ctx context.Context, rounds int, run RunFunc, onRun func(CompareRun)) ([]CompareRun, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("--rounds %d is below 1: %w", rounds, ErrConfig)
	}
	runs := make([]CompareRun, 0, 2*rounds)
	for r := 0; r < rounds; r++ {
		for _, side := range RoundOrder(r) {
			if err := ctx.Err(); err != nil {
				return runs, fmt.Errorf("round %d %s: %w", r+1, side, err)
			}
			res, err := run(ctx, side, r+1)
			if err != nil {
				return runs, fmt.Errorf("round %d %s: %w", r+1, side, err)
			}
			cr := CompareRun{Round: r + 1, Side: side, Result: res}
			runs = append(runs, cr)
			if onRun != nil {
				onRun(cr)
			}
		}
	}
	return runs, nil
}

// Metric is one figure a comparison sets side by side.
type Metric struct {
	Name           string // as printed, with its unit
	HigherIsBetter bool
	// Value reads the figure from a report; false when the report does not have it (no server
	// process found, no sync counter exposed, no end-to-end latency in this workload).
	Value func(*Result) (float64, bool)
}

// CompareMetrics are the figures a comparison reports, in the order it prints them: the
// workload's rate, the push rate where pushes run beside consumers, the main request's and
// the end-to-end latency, and the server's cost per request.
var CompareMetrics = []Metric{
	{"msg/s", true, func(r *Result) (float64, bool) { return r.MsgPerSec, r.MsgPerSec > 0 }},
	{"push msg/s", true, func(r *Result) (float64, bool) {
		mixed := r.Workload == WorkloadE2E || r.Workload == WorkloadFanout
		return r.PushMsgPerSec, mixed && r.PushMsgPerSec > 0
	}},
	{"request p50 ms", false, func(r *Result) (float64, bool) { return r.LatencyMs.P50, r.LatencyMs.Count > 0 }},
	{"request p99 ms", false, func(r *Result) (float64, bool) { return r.LatencyMs.P99, r.LatencyMs.Count > 0 }},
	// Where pushes run beside consumers the main request is the pop, a long-poll whose latency
	// includes its wait for messages: the pushes' own p99 is its own figure (issue 23 read the
	// e2e shape's pop p99 of ~107 ms as the push's).
	{"push request p99 ms", false, func(r *Result) (float64, bool) {
		p, ok := r.RequestLatencyMs[string(OpPush)]
		return p.P99, mixedPush(r) && ok && p.Count > 0
	}},
	{"e2e p50 ms", false, func(r *Result) (float64, bool) { return e2e(r, func(p Percentiles) float64 { return p.P50 }) }},
	{"e2e p99 ms", false, func(r *Result) (float64, bool) { return e2e(r, func(p Percentiles) float64 { return p.P99 }) }},
	{"worst group e2e p99 ms", false, func(r *Result) (float64, bool) {
		return r.WorstGroupE2EP99Ms, len(r.GroupE2ELatencyMs) > 0
	}},
	{"last ÷ first interval msg/s", true, func(r *Result) (float64, bool) { return r.HoldRate, r.HoldRate > 0 }},
	{"last ÷ first interval CPU/req", false, func(r *Result) (float64, bool) { return r.HoldCPU, r.HoldCPU > 0 }},
	{"server CPU µs/request", false, func(r *Result) (float64, bool) {
		return r.ServerCPUMicrosPerRequest, r.ServerCPUMicrosPerRequest > 0
	}},
	// The cluster shape (BinaryCompare.Cluster): server CPU above is the leader's.
	{"followers CPU µs/request", false, func(r *Result) (float64, bool) {
		return r.FollowerCPUMicrosPerRequest, r.FollowerCPUMicrosPerRequest > 0
	}},
	{"one node msg/s", true, func(r *Result) (float64, bool) {
		return singleFigure(r, func(s *Result) float64 { return s.MsgPerSec })
	}},
	{"one node CPU µs/request", false, func(r *Result) (float64, bool) {
		return singleFigure(r, func(s *Result) float64 { return s.ServerCPUMicrosPerRequest })
	}},
	{"cluster ÷ one node msg/s", true, func(r *Result) (float64, bool) { return r.ClusterRate, r.ClusterRate > 0 }},
	{"leader ÷ one node CPU/req", false, func(r *Result) (float64, bool) { return r.ClusterLeaderCPU, r.ClusterLeaderCPU > 0 }},
	// At the end of the window; the anon part leaves out mapped files' pages (ProcSample), so
	// a growing total with a flat anon part is page cache seen through mappings.
	{"server RSS MB", false, func(r *Result) (float64, bool) {
		return float64(r.ServerRssBytes) / 1e6, r.ServerRssBytes > 0
	}},
	{"server anon RSS MB", false, func(r *Result) (float64, bool) {
		return float64(r.ServerAnonRssBytes) / 1e6, r.ServerAnonRssBytes > 0
	}},
	{"server syncs/request", false, func(r *Result) (float64, bool) {
		if r.ServerSyncsPerRequest == nil {
			return 0, false
		}
		return *r.ServerSyncsPerRequest, true
	}},
}

// singleFigure reads a figure of a cluster run's single-node run (false: none, or 0).
func singleFigure(r *Result, f func(*Result) float64) (float64, bool) {
	if r.SingleNode == nil {
		return 0, false
	}
	v := f(r.SingleNode)
	return v, v > 0
}

// mixedPush reports whether r's pushes ran beside consumers, so that its main request is
// not the push: e2e, fanout and longpoll.
func mixedPush(r *Result) bool {
	return r.Workload == WorkloadE2E || r.Workload == WorkloadFanout || r.Workload == WorkloadLongPoll
}

func e2e(r *Result, q func(Percentiles) float64) (float64, bool) {
	if r.E2ELatencyMs == nil || r.E2ELatencyMs.Count == 0 {
		return 0, false
	}
	return q(*r.E2ELatencyMs), true
}

// MetricRatio is one metric over a comparison.
type MetricRatio struct {
	Metric         string `json:"metric"`
	HigherIsBetter bool   `json:"higherIsBetter"`
	// Baseline and Candidate are the medians of each side's figures over the rounds that have
	// both; Ratios the per-round candidate ÷ baseline of those rounds, in round order.
	Baseline  float64   `json:"baseline"`
	Candidate float64   `json:"candidate"`
	Ratios    []float64 `json:"ratios"`
	// Median, Min and Max summarise Ratios: the median is the comparison's answer, min–max
	// how far a single round could be off it.
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize pairs each round's baseline and candidate run and computes, for every metric of
// CompareMetrics that both runs of at least one round have, the per-round ratio candidate ÷
// baseline and its median, min and max. A round missing either side, or whose baseline
// figure is 0 (a ratio would be infinite), is left out of that metric.
func Summarize(runs []CompareRun) []MetricRatio {
	type pair struct{ base, cand *Result }
	byRound := map[int]*pair{}
	for _, r := range runs {
		p := byRound[r.Round]
		if p == nil {
			p = &pair{}
			byRound[r.Round] = p
		}
		if r.Side == Candidate {
			p.cand = r.Result
		} else {
			p.base = r.Result
		}
	}
	rounds := make([]int, 0, len(byRound))
	for r := range byRound {
		rounds = append(rounds, r)
	}
	sort.Ints(rounds)
	var out []MetricRatio
	for _, m := range CompareMetrics {
		var bases, cands, ratios []float64
		for _, r := range rounds {
			p := byRound[r]
			if p.base == nil || p.cand == nil {
				continue
			}
			b, okB := m.Value(p.base)
			c, okC := m.Value(p.cand)
			if !okB || !okC || b == 0 {
				continue
			}
			bases, cands, ratios = append(bases, b), append(cands, c), append(ratios, c/b)
		}
		if len(ratios) == 0 {
			continue
		}
		out = append(out, MetricRatio{
			Metric: m.Name, HigherIsBetter: m.HigherIsBetter,
			Baseline: Median(bases), Candidate: Median(cands), Ratios: ratios,
			Median: Median(ratios), Min: slices.Min(ratios), Max: slices.Max(ratios),
		})
	}
	return out
}

// Median is the middle value of xs (the mean of the two middle ones for an even count); 0 for
// none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}
