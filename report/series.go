package report

import (
	"time"

	"github.com/combmq/comb/analytics"
)

// The read side of the per-minute series (spec 8.3, 8.7); what is counted and
// where is described in broker/maint_series.go.

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
func (rs *Reports) seriesMatch(q SeriesQuery) func([16]byte, string) bool {
	if q.Queue == "" && q.Namespace == "" && q.Task == "" {
		return nil
	}
	names := make(map[string]bool)
	for _, qu := range rs.v.Queues() {
		c := qu.Conf()
		if (q.Queue == "" || qu.Name() == q.Queue) && (q.Namespace == "" || c.Namespace == q.Namespace) && (q.Task == "" || c.Task == q.Task) {
			names[qu.Name()] = true
		}
	}
	return func(_ [16]byte, name string) bool { return names[name] }
}

// Series answers the buckets of q summed over its queues, oldest first, dense.
// With counting off (Config.NoAnalytics) every bucket is zero.
func (rs *Reports) Series(q SeriesQuery) []analytics.Bucket {
	return rs.v.Series().Series(analytics.Query{Interval: q.Interval, From: q.From, To: q.To, Match: rs.seriesMatch(q)})
}

// SeriesByQueue answers q's non-zero buckets per queue, by queue name.
func (rs *Reports) SeriesByQueue(q SeriesQuery) []analytics.QueueSeries {
	return rs.v.Series().PerQueue(analytics.Query{Interval: q.Interval, From: q.From, To: q.To, Match: rs.seriesMatch(q)})
}

// LastMinute calls fn with every queue's newest closed minute (Prometheus'
// per-minute gauges).
func (rs *Reports) LastMinute(fn func(queue string, p analytics.Point)) {
	rs.v.Series().LastMinute(func(_ [16]byte, name string, p analytics.Point) { fn(name, p) })
}
