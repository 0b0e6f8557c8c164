package broker

import "sync/atomic"

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

// numSyncBuckets is len(SyncBucketsMicros) plus the +Inf bucket.
const numSyncBuckets = 14

// syncHist counts every group-commit sync of the commit log (issue 10: every
// sync, not a sample) in atomic buckets: observe is called by the commit
// log's committer at each sync and takes no lock; snapshot is what Stats
// reports, the same to every scraper (/metrics and /metrics/prometheus).
type syncHist struct {
	counts [numSyncBuckets]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Int64                  // µs
}

// observe counts one sync of us µs.
func (h *syncHist) observe(us int64) {
	i := 0
	for i < len(SyncBucketsMicros) && us > SyncBucketsMicros[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(us)
}

// snapshot returns the cumulative histogram. Count is the sum of the buckets
// read, so a scrape racing a sync never shows a bucket above Count.
func (h *syncHist) snapshot() LatencyHistogram {
	out := LatencyHistogram{BoundsMicros: SyncBucketsMicros, Counts: make([]uint64, len(SyncBucketsMicros)), SumMicros: h.sum.Load()}
	var run uint64
	for i := range h.counts {
		run += h.counts[i].Load()
		if i < len(out.Counts) {
			out.Counts[i] = run
		}
	}
	out.Count = run
	return out
}
