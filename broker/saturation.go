package broker

import (
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// cpuSaturation says whether this process's goroutines wait for a CPU: the
// share of the Go scheduler's recent scheduling events (runtime/metrics
// /sched/latencies:seconds, the time from runnable to running; the runtime
// samples them) that waited satLatency or more, read at most every
// satEvery. The group-commit wait holds a consumer's batch only then
// (Broker.consumerFacing): on a saturated box each sync saved is CPU for
// requests (e2e at 100,000 msg/s held its rate only with the wait: 0.096
// against 0.28 syncs per request), on a box with CPU to spare the wait is
// only latency (200 long-polling consumers: e2e p50 2.3 -> 8.5 ms).
//
// Calibrated on the 2-vCPU VM of docs/benchmarks.md: in that long-poll run
// 0-4 % of the events (mostly under 1 %) waited 1 ms or more, in the e2e run
// at 100,000 msg/s 6.5-22 % (median ~11 %); 40-60 % waited 100 µs or more
// in both, so shorter thresholds do not tell them apart.
type cpuSaturation struct {
	mu      sync.Mutex
	next    atomic.Int64 // UnixNano of the next read
	busy    atomic.Bool
	prev    []uint64 // the counts at the last read
	delta   []uint64 // growth since then (kept: no allocation per read)
	samples []metrics.Sample
}

const (
	satEvery   = 100 * time.Millisecond
	satLatency = time.Millisecond
	satShare   = 0.05
)

// saturated reports the state at the last read, reading the histogram again
// when satEvery has passed (one caller at a time; the others get the last
// state). An atomic load and a clock read otherwise.
func (s *cpuSaturation) saturated() bool {
	now := time.Now().UnixNano()
	if now >= s.next.Load() && s.mu.TryLock() {
		s.read(now)
		s.mu.Unlock()
	}
	return s.busy.Load()
}

// read takes the histogram's growth since the previous read (s.mu held).
func (s *cpuSaturation) read(now int64) {
	s.next.Store(now + int64(satEvery))
	if s.samples == nil {
		s.samples = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(s.samples)
	if s.samples[0].Value.Kind() != metrics.KindFloat64Histogram {
		return
	}
	h := s.samples[0].Value.Float64Histogram()
	if len(s.prev) != len(h.Counts) {
		s.prev = append(s.prev[:0], h.Counts...)
		return
	}
	s.delta = s.delta[:0]
	for i, c := range h.Counts {
		s.delta = append(s.delta, c-s.prev[i])
		s.prev[i] = c
	}
	s.busy.Store(schedSaturated(s.delta, h.Buckets))
}

// schedSaturated reports whether at least satShare of the scheduling
// events counted in counts (bucket i holds latencies in [buckets[i],
// buckets[i+1]) seconds) waited satLatency or more; false when none.
func schedSaturated(counts []uint64, buckets []float64) bool {
	var all, slow uint64
	for i, c := range counts {
		all += c
		if buckets[i] >= satLatency.Seconds() {
			slow += c
		}
	}
	return all > 0 && float64(slow) >= satShare*float64(all)
}
