package broker

import "sync"

// SyncBucketsMicros are the upper bounds (µs) of the group-commit sync latency
// histogram: fdatasync is ~0.2 ms typical on the project machine
// (design/performance.md), so the buckets are dense around it.
var SyncBucketsMicros = []int64{50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000}

// LatencyHistogram is a cumulative histogram since the broker opened:
// Counts[i] is the number of samples ≤ SyncBucketsMicros[i] (cumulative, as
// Prometheus buckets are), Count all samples, SumMicros their sum in µs. It
// only grows, so every scraper sees monotonic counters.
type LatencyHistogram struct {
	BoundsMicros []int64
	Counts       []uint64
	Count        uint64
	SumMicros    int64
}

// syncHist folds the committer's drained sync durations into one cumulative
// histogram, so that each Stats call (several scrapers, /metrics and
// /metrics/prometheus) sees every sync exactly once.
type syncHist struct {
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last one is +Inf
	count  uint64
	sum    int64
}

// add folds samples (µs) in and returns a cumulative copy.
func (h *syncHist) add(samples []int64) LatencyHistogram {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make([]uint64, len(SyncBucketsMicros)+1)
	}
	for _, v := range samples {
		i := 0
		for i < len(SyncBucketsMicros) && v > SyncBucketsMicros[i] {
			i++
		}
		h.counts[i]++
		h.count++
		h.sum += v
	}
	out := LatencyHistogram{BoundsMicros: SyncBucketsMicros, Counts: make([]uint64, len(SyncBucketsMicros)), Count: h.count, SumMicros: h.sum}
	var run uint64
	for i := range SyncBucketsMicros {
		run += h.counts[i]
		out.Counts[i] = run
	}
	return out
}
