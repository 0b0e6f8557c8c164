package broker

import (
	"path/filepath"
	"time"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/lease"
)

// The per-minute series of the dashboard (spec 8.7) and of the per-minute
// Prometheus gauges (spec 8.3), kept by package analytics. What is counted,
// and where:
//
//	ingested   messages stored by a push (write_push.go), per partition group
//	popped     messages claimed by a pop (read_claim.go addClaimed), with their
//	           lag: now - the message's segment timestamp, in ms
//	processed  acks of status completed (ack.go), and autoAck pops
//	errors     acks of status failed or dlq
//
// A transaction's pushes and acks count as the same operations do (countTx).
// A claim whose checkpoint then fails (a full disk) is still counted: the
// series are for charts, not for accounting.
// The rings are saved to <data>/meta/analytics at each minute boundary (the
// maintenance task's tick) and at Close.

const seriesFile = "analytics"

func (b *Broker) seriesPath() string { return filepath.Join(b.dir, layout.Meta, seriesFile) }

// openSeries loads the saved series before the registry is built, so that
// each queue adopts its own when newQueue asks for its counters. A file that
// does not load is set aside with a warning: the charts start blank.
func (b *Broker) openSeries() {
	if b.cfg.NoAnalytics {
		return
	}
	s, err := analytics.Load(b.fs, b.seriesPath())
	if err != nil {
		b.log.Warn().Err(err).Msg("analytics: the saved series do not load; starting blank")
		s = analytics.NewStore()
	}
	s.Tick(b.now())
	b.series = s
}

// tickSeries closes the minute once the clock is past it and saves the file
// (called by every maintenance tick; a no-op inside the minute).
func (b *Broker) tickSeries(now time.Time) {
	if !b.series.Tick(now) {
		return
	}
	b.saveSeries()
}

// closeSeries moves the live counters into their minute and saves the file.
func (b *Broker) closeSeries() {
	if b.series == nil {
		return
	}
	b.series.Flush(b.now())
	b.saveSeries()
}

func (b *Broker) saveSeries() {
	if err := b.series.Save(b.fs, b.seriesPath(), b.noSync()); err != nil {
		b.log.Warn().Err(err).Msg("analytics: saving the series failed; the next minute tries again")
	}
}

// countAcks adds an ack request's applied acks to their queues' series.
func countAcks(batches []*ackBatch, results []AckResult) {
	for _, ab := range batches {
		var done, failed int
		for i := range ab.acks {
			if !results[ab.acks[i].Index].Success {
				continue
			}
			switch ab.acks[i].Status {
			case lease.StatusCompleted:
				done++
			case lease.StatusFailed, lease.StatusDLQ:
				failed++
			}
		}
		ab.p.q.an.Processed(done)
		ab.p.q.an.Errors(failed)
	}
}

// countTx adds a committed transaction's pushes (not its duplicates) and
// applied acks to their queues' series.
func countTx(t *txRun) {
	if !t.res.Success {
		return
	}
	for i, r := range t.results {
		if !r.Success || i >= len(t.opPart) || t.opPart[i] == nil {
			continue
		}
		an := t.opPart[i].q.an
		switch {
		case r.Type == "push" && !r.Duplicate:
			an.Ingested(1)
		case r.Type == "ack":
			switch lease.ParseStatus(t.ops[i].Ack.Status) {
			case lease.StatusCompleted:
				an.Processed(1)
			case lease.StatusFailed, lease.StatusDLQ:
				an.Errors(1)
			}
		}
	}
}

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
