package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// Timeline is the open-loop schedule of a --rate run: send k (k = 0, 1, 2, ...) is due at
// Start + k × Interval whatever happened to the sends before it. Latency is measured from the
// due time, not from the moment a worker got round to sending, so a stalled server shows up as
// latency on every send it delayed instead of as a quiet gap (coordinated omission).
// Safe for concurrent use: pushers draw tickets from one shared counter.
type Timeline struct {
	start    time.Time
	interval time.Duration
	next     atomic.Int64
}

// NewTimeline schedules requests of batch messages each so the messages add up to rate msg/s.
// rate must be > 0 and batch >= 1.
func NewTimeline(start time.Time, rate float64, batch int) *Timeline {
	iv := time.Duration(float64(time.Second) * float64(batch) / rate)
	if iv <= 0 {
		iv = 1
	}
	return &Timeline{start: start, interval: iv}
}

// DueTime is when send k is due.
func (t *Timeline) DueTime(k int64) time.Time {
	return t.start.Add(time.Duration(k) * t.interval)
}

// Next hands out the next ticket and its due time.
func (t *Timeline) Next() (k int64, due time.Time) {
	k = t.next.Add(1) - 1
	return k, t.DueTime(k)
}

// waitUntil blocks until due or until ctx ends; it reports whether due was reached.
func waitUntil(ctx context.Context, due time.Time) bool {
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
