package broker

import (
	"time"

	"github.com/combmq/comb/analytics"
)

// The read side of the per-minute series (spec 8.3, 8.7); what is counted and
// where is described in maint_series.go.

// SeriesQuery selects buckets of the per-minute series: Interval wide, from
// From to To; Queue, Namespace and Task ("" = any) pick the queues.
type SeriesQuery struct {
	Interval               analytics.Interval
	From, To               time.Time
	Queue, Namespace, Task string
}

// seriesMatch returns the queue filter of q, nil for every queue. The names
// are looked up before the store's lock is taken (the registry lock is never
// taken under it: newQueue asks the store for counters under the registry's).
func (b *Broker) seriesMatch(q SeriesQuery) func([16]byte, string) bool {
	if q.Queue == "" && q.Namespace == "" && q.Task == "" {
		return nil
	}
	names := make(map[string]bool)
	for _, qu := range b.sortedQueues() {
		c := qu.conf.Load()
		if (q.Queue == "" || qu.name == q.Queue) && (q.Namespace == "" || c.namespace == q.Namespace) && (q.Task == "" || c.task == q.Task) {
			names[qu.name] = true
		}
	}
	return func(_ [16]byte, name string) bool { return names[name] }
}

// Series answers the buckets of q summed over its queues, oldest first, dense.
// With counting off (Config.NoAnalytics) every bucket is zero.
func (b *Broker) Series(q SeriesQuery) []analytics.Bucket {
	return b.series.Series(analytics.Query{Interval: q.Interval, From: q.From, To: q.To, Match: b.seriesMatch(q)})
}

// SeriesByQueue answers q's non-zero buckets per queue, by queue name.
func (b *Broker) SeriesByQueue(q SeriesQuery) []analytics.QueueSeries {
	return b.series.PerQueue(analytics.Query{Interval: q.Interval, From: q.From, To: q.To, Match: b.seriesMatch(q)})
}

// LastMinute calls fn with every queue's newest closed minute (Prometheus'
// per-minute gauges).
func (b *Broker) LastMinute(fn func(queue string, p analytics.Point)) {
	b.series.LastMinute(func(_ [16]byte, name string, p analytics.Point) { fn(name, p) })
}
