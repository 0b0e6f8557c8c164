package report

import (
	"sync"
	"time"
)

// DataWalkMaxAge is how old the data directory's size in Storage may be
// (StorageStatus.DataBytes, DataFiles, DataErr) at least. The walk behind it
// costs one stat per file (BenchmarkDirBytes: ~150 ms for 1,000 partitions of
// five files on the VM of issue 23 under load; 5-9 % of a long-poll run's
// server CPU when scraped every second, docs/benchmarks.md), while a
// Prometheus scrape or the dashboard may ask every second. Ten seconds is
// below Prometheus's default scrape interval (15 s), so a scraper at that
// pace still gets a fresh walk each time on a small data directory.
const DataWalkMaxAge = 10 * time.Second

// dataWalkCostFactor stretches the age for a large data directory: a walk
// that took d is reused for dataWalkCostFactor × d when that is longer than
// DataWalkMaxAge, so the walks take at most ~2 % of a core however many
// partitions there are (a walk of 100,000 partitions takes seconds).
const dataWalkCostFactor = 50

// dataWalk caches the last walk of the data directory. Callers at the same
// time share one walk: the second waits for the first's result.
type dataWalk struct {
	mu      sync.Mutex
	dir     string
	at      time.Time     // when the cached walk started; zero: none yet
	maxAge  time.Duration // how long it is reused
	bytes   int64
	files   int64
	errText string
	// elapsed times a walk (nil: time.Since; tests set it).
	elapsed func(start time.Time) time.Duration
}

// get returns dirBytes(dir), walked again when the cached walk is of another
// directory or its age (from its start to now) is past its max age or
// negative (a clock set back). The max age is DataWalkMaxAge, or
// dataWalkCostFactor times the walk's own duration (measured on the
// monotonic clock) when longer.
func (w *dataWalk) get(dir string, now time.Time) (bytes, files int64, errText string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if age := now.Sub(w.at); w.at.IsZero() || w.dir != dir || age < 0 || age >= w.maxAge {
		elapsed := w.elapsed
		if elapsed == nil {
			elapsed = time.Since
		}
		start := time.Now()
		w.bytes, w.files, w.errText = dirBytes(dir)
		w.dir, w.at = dir, now
		w.maxAge = max(DataWalkMaxAge, dataWalkCostFactor*elapsed(start))
	}
	return w.bytes, w.files, w.errText
}
