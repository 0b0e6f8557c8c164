package httpapi

import (
	"os"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// The dashboard's status routes (spec 8.7): GET /api/v1/status, /status/queues,
// /status/queues/:queue, /status/queues/:queue/messages, /status/analytics and
// /status/buffers. Their series come from the broker's per-minute counts
// (package analytics, broker/maint_series.go, report/series.go); their counts from the
// resources reports (spec 8.4).

// statusBackend is what these routes ask beyond Reports (*report.Reports has
// it). Reports without it (the HTTP tests' fake) answer them 501.
type statusBackend interface {
	Series(q report.SeriesQuery) []analytics.Bucket
	SeriesByQueue(q report.SeriesQuery) []analytics.QueueSeries
	LastMinute(fn func(queue string, p analytics.Point))
	StatusQueue(name string, page report.PartitionPage) (report.StatusQueueDetail, bool)
	RecentMessages(name string, limit, offset int) ([]report.RecentMessage, bool)
	StatusSummary() report.StatusSummary
	CheckpointLatency() broker.LatencyHistogram
	DLQDepths(fn func(queue string, n int64))
	SegmentBytes() (bytes int64, unlisted int)
}

var _ statusBackend = (*report.Reports)(nil)

// withStatus runs fn with the status backend, or answers 501.
func (s *Server) withStatus(ctx *fasthttp.RequestCtx, fn func(sb statusBackend)) {
	sb, ok := s.rep.(statusBackend)
	if !ok {
		notSupported(ctx)
		return
	}
	if !validTimeRange(ctx) {
		return
	}
	fn(sb)
}

// validTimeRange answers 400 for a from or to that is present but not
// ISO-8601, as GET /api/v1/messages does, instead of quietly using the
// default window; it reports whether the request may go on.
func validTimeRange(ctx *fasthttp.RequestCtx) bool {
	q := queryArgs{ctx.QueryArgs()}
	for _, key := range []string{"from", "to"} {
		if _, ok := timeArg(ctx, q, key); !ok {
			return false
		}
	}
	return true
}

// timeArg reads the ISO-8601 query argument key as µs since the epoch (0 when
// absent); a present but unreadable one is answered 400 and ok is false.
func timeArg(ctx *fasthttp.RequestCtx, q queryArgs, key string) (micros int64, ok bool) {
	text := q.str(key)
	if text == "" {
		return 0, true
	}
	if micros, ok = parseISO(text); !ok {
		badRequest(ctx, "Invalid "+key+" timestamp: must be ISO-8601")
	}
	return micros, ok
}

// notSupported answers spec 8.10's 501 for what comb does not have (PostgreSQL).
func notSupported(ctx *fasthttp.RequestCtx) {
	writeError(ctx, fasthttp.StatusNotImplemented, "Not supported")
}

// bucketFor picks the bucket width of a range: minutes up to 6 hours, hours
// up to 7 days, days beyond (every answer stays within analytics.MaxBuckets).
func bucketFor(from, to time.Time) analytics.Interval {
	switch d := to.Sub(from); {
	case d <= 6*time.Hour:
		return analytics.Minute
	case d <= 7*24*time.Hour:
		return analytics.Hour
	}
	return analytics.Day
}

func bucketMinutes(iv analytics.Interval) int64 { return iv.Seconds() / 60 }

type timeRangeJSON struct {
	From isoTime `json:"from"`
	To   isoTime `json:"to"`
}

// throughputPoint is one bucket of GET /api/v1/status (Queen's field names).
type throughputPoint struct {
	Timestamp          bucketTime `json:"timestamp"`
	Ingested           uint64     `json:"ingested"`
	Processed          uint64     `json:"processed"`
	PopMessages        uint64     `json:"popMessages"`
	IngestedPerSecond  float64    `json:"ingestedPerSecond"`
	ProcessedPerSecond float64    `json:"processedPerSecond"`
	PopPerSecond       float64    `json:"popPerSecond"`
	AvgLagMs           float64    `json:"avgLagMs"`
	MaxLagMs           uint64     `json:"maxLagMs"`
	AckFailed          uint64     `json:"ackFailed"`
	DLQCount           uint64     `json:"dlqCount"`
}

type statusQueueRow struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	Partitions    int    `json:"partitions"`
	TotalConsumed int64  `json:"totalConsumed"`
}

type statusMessages struct {
	Total           int64              `json:"total"`
	Pending         int64              `json:"pending"`
	Processing      int64              `json:"processing"`
	Completed       int64              `json:"completed"`
	Failed          int64              `json:"failed"`
	DeadLetter      int64              `json:"deadLetter"`
	Requests        map[string]uint64  `json:"requests"`
	BatchEfficiency map[string]float64 `json:"batchEfficiency"`
}

type statusLeases struct {
	Active               int    `json:"active"`
	PartitionsWithLeases int    `json:"partitionsWithLeases"`
	TotalAcked           uint64 `json:"totalAcked"`
	TotalBatchSize       int64  `json:"totalBatchSize"`
}

type statusDLQ struct {
	TotalMessages      int64 `json:"totalMessages"`
	AffectedPartitions int   `json:"affectedPartitions"`
	TopErrors          []any `json:"topErrors"`
}

type statusErrors struct {
	AckFailed   uint64 `json:"ackFailed"`
	DBErrors    uint64 `json:"dbErrors"`
	DLQMessages uint64 `json:"dlqMessages"`
}

// statusWorker describes this process: comb is one worker.
type statusWorker struct {
	Hostname string  `json:"hostname"`
	WorkerID int     `json:"workerId"`
	PID      int     `json:"pid"`
	LastSeen isoTime `json:"lastSeen"`
}

type statusOverview struct {
	TimeRange       timeRangeJSON     `json:"timeRange"`
	BucketMinutes   int64             `json:"bucketMinutes"`
	PointCount      int               `json:"pointCount"`
	Throughput      []throughputPoint `json:"throughput"`
	Queues          []statusQueueRow  `json:"queues"`
	Messages        statusMessages    `json:"messages"`
	Leases          statusLeases      `json:"leases"`
	DeadLetterQueue statusDLQ         `json:"deadLetterQueue"`
	Workers         []overviewWorker  `json:"workers"`
	Errors          statusErrors      `json:"errors"`
	StatsAge        int               `json:"statsAge"`
}

// overviewWorker is a workers row of GET /api/v1/status (Queen's fields);
// comb has no event loop, job queue or database pool, so those read 0.
type overviewWorker struct {
	Hostname          string `json:"hostname"`
	WorkerID          int    `json:"workerId"`
	MessagesProcessed uint64 `json:"messagesProcessed"`
	AvgEventLoopLagMs int    `json:"avgEventLoopLagMs"`
	MaxEventLoopLagMs int    `json:"maxEventLoopLagMs"`
	FreeSlots         int    `json:"freeSlots"`
	JobQueueSize      int    `json:"jobQueueSize"`
	DBConnections     int    `json:"dbConnections"`
}

func (s *Server) worker(now time.Time) statusWorker {
	host, _ := os.Hostname()
	return statusWorker{Hostname: host, PID: os.Getpid(), LastSeen: isoTime(now)}
}

// throughputPoints turns buckets into Queen's throughput rows, newest first.
func throughputPoints(bs []analytics.Bucket, iv analytics.Interval) []throughputPoint {
	secs := float64(iv.Seconds())
	out := make([]throughputPoint, len(bs))
	for i, b := range bs {
		out[len(bs)-1-i] = throughputPoint{
			Timestamp: bucketTime(b.Start), Ingested: b.Ingested, Processed: b.Processed, PopMessages: b.Popped,
			IngestedPerSecond: round2(float64(b.Ingested) / secs), ProcessedPerSecond: round2(float64(b.Processed) / secs),
			PopPerSecond: round2(float64(b.Popped) / secs), AvgLagMs: round2(b.AvgLagMs()), MaxLagMs: b.LagMaxMs, AckFailed: b.Errors,
			DLQCount: b.DeadLettered,
		}
	}
	return out
}

// status serves GET /api/v1/status: the overview of the dashboard. Range
// from/to (default the last hour); queue, namespace and task filter the
// series and the queue list.
func (s *Server) status(ctx *fasthttp.RequestCtx) {
	s.withStatus(ctx, func(sb statusBackend) {
		q := queryArgs{ctx.QueryArgs()}
		now := time.Now()
		from, to := timeRange(q, now, time.Hour)
		iv := bucketFor(from, to)
		sq := report.SeriesQuery{Interval: iv, From: from, To: to, Queue: q.str("queue"), Namespace: q.str("namespace"), Task: q.str("task")}
		points := throughputPoints(sb.Series(sq), iv)
		o := statusOverview{TimeRange: timeRangeJSON{isoTime(from), isoTime(to)}, BucketMinutes: bucketMinutes(iv),
			PointCount: len(points), Throughput: points, Queues: []statusQueueRow{}}
		for _, r := range s.rep.ResourceQueues(report.ResourceFilter{Namespace: sq.Namespace, Task: sq.Task}) {
			if sq.Queue != "" && r.Name != sq.Queue {
				continue
			}
			o.Queues = append(o.Queues, statusQueueRow{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task,
				Partitions: r.Partitions, TotalConsumed: r.Messages.Completed})
			m := &o.Messages
			m.Total += r.Messages.Total
			m.Pending += r.Messages.Pending
			m.Processing += r.Messages.Processing
			m.Completed += r.Messages.Completed
			m.Failed += r.Messages.Failed
			m.DeadLetter += r.Messages.DeadLetter
		}
		st := s.rep.Stats()
		o.Messages.Requests = map[string]uint64{"push": st.PushRequests, "pop": st.PopRequests, "ack": st.AckRequests}
		o.Messages.BatchEfficiency = map[string]float64{"push": perRequest(st.PushMessages, st.PushRequests),
			"pop": perRequest(st.PopMessages, st.PopRequests), "ack": perRequest(st.AckMessages, st.AckRequests)}
		sum := sb.StatusSummary()
		o.Leases = statusLeases{Active: sum.ActiveLeases, PartitionsWithLeases: sum.PartitionsWithLeases, TotalAcked: st.AckSuccess, TotalBatchSize: sum.LeasedMessages}
		o.DeadLetterQueue = statusDLQ{TotalMessages: sum.DLQMessages, AffectedPartitions: sum.DLQPartitions, TopErrors: []any{}}
		for _, p := range points {
			o.Errors.AckFailed += p.AckFailed
		}
		o.Errors.DLQMessages = st.DLQMessages
		o.Workers = []overviewWorker{{Hostname: s.worker(now).Hostname, MessagesProcessed: st.AckSuccess}}
		s.sendValue(ctx, fasthttp.StatusOK, o)
	})
}

func perRequest(msgs, reqs uint64) float64 {
	if reqs == 0 {
		return 0
	}
	return round2(float64(msgs) / float64(reqs))
}

type countsJSON struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

func counts(c report.MessageCounts) countsJSON {
	return countsJSON{c.Total, c.Pending, c.Processing, c.Completed, c.Failed, c.DeadLetter}
}

type statusQueueListRow struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Namespace  string    `json:"namespace"`
	Task       string    `json:"task"`
	CreatedAt  isoMicros `json:"createdAt"`
	Partitions int       `json:"partitions"`
	Messages   struct {
		Total      int64 `json:"total"`
		Pending    int64 `json:"pending"`
		Processing int64 `json:"processing"`
	} `json:"messages"`
}

type pagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// statusQueues serves GET /api/v1/status/queues: the resources queue list
// (newest first) with pagination, limit 100 by default.
func (s *Server) statusQueues(ctx *fasthttp.RequestCtx) {
	if !validTimeRange(ctx) {
		return
	}
	q := queryArgs{ctx.QueryArgs()}
	f := report.ResourceFilter{Namespace: q.str("namespace"), Task: q.str("task"),
		Limit: int(min(max(q.integer("limit", 100), 1), 10000)), Offset: int(min(max(q.integer("offset", 0), 0), 1<<31))}
	out := struct {
		Queues     []statusQueueListRow `json:"queues"`
		Pagination pagination           `json:"pagination"`
	}{Queues: []statusQueueListRow{}, Pagination: pagination{f.Limit, f.Offset}}
	for _, r := range s.rep.ResourceQueues(f) {
		row := statusQueueListRow{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task, CreatedAt: isoMicros(r.CreatedAtMicros), Partitions: r.Partitions}
		row.Messages.Total, row.Messages.Pending, row.Messages.Processing = r.Messages.Total, r.Messages.Pending, r.Messages.Processing
		out.Queues = append(out.Queues, row)
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

type statusQueueConfig struct {
	LeaseTime       int64 `json:"leaseTime"`
	RetryLimit      int64 `json:"retryLimit"`
	RetryDelay      int64 `json:"retryDelay"`
	TTL             int64 `json:"ttl"`
	MaxQueueSize    int64 `json:"maxQueueSize"`
	DeadLetterQueue bool  `json:"deadLetterQueue"`
}

type statusQueueHead struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Task      string            `json:"task"`
	Priority  int64             `json:"priority"`
	CreatedAt isoMicros         `json:"createdAt"`
	Config    statusQueueConfig `json:"config"`
}

type statusPartition struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	CreatedAt isoMicros  `json:"createdAt"`
	Messages  countsJSON `json:"messages"`
	Stats     countsJSON `json:"stats"`
	Cursor    struct {
		TotalConsumed   int64 `json:"totalConsumed"`
		BatchesConsumed int64 `json:"batchesConsumed"`
	} `json:"cursor"`
	LastActivity  isoMicros `json:"lastActivity"`
	OldestMessage isoMicros `json:"oldestMessage"`
	NewestMessage isoMicros `json:"newestMessage"`
}

type statusTotals struct {
	Messages countsJSON `json:"messages"`
	countsJSON
}

// statusQueue serves GET /api/v1/status/queues/:queue; unknown → 404.
func (s *Server) statusQueue(ctx *fasthttp.RequestCtx, name string) {
	s.withStatus(ctx, func(sb statusBackend) {
		d, ok := sb.StatusQueue(name, partitionPage(ctx))
		if !ok {
			writeError(ctx, fasthttp.StatusNotFound, "Queue not found")
			return
		}
		o := d.Options
		out := struct {
			Queue          statusQueueHead   `json:"queue"`
			Partitions     []statusPartition `json:"partitions"`
			PartitionCount int               `json:"partitionCount"` // every partition; the list is one page
			Totals         statusTotals      `json:"totals"`
		}{
			PartitionCount: d.Partitions,
			Queue: statusQueueHead{ID: d.ID, Name: d.Name, Namespace: d.Namespace, Task: d.Task, Priority: o.Priority, CreatedAt: isoMicros(d.CreatedAtMicros),
				Config: statusQueueConfig{o.LeaseTime, o.RetryLimit, o.RetryDelay, o.TTL, o.MaxSize, o.DeadLetterQueue}},
			Partitions: make([]statusPartition, 0, len(d.PartitionList)),
			Totals:     statusTotals{Messages: counts(d.Messages), countsJSON: counts(d.Messages)},
		}
		for i, rp := range d.PartitionList {
			p := statusPartition{ID: rp.ID, Name: rp.Name, CreatedAt: isoMicros(rp.CreatedAtMicros), Messages: counts(rp.Stats), Stats: counts(rp.Stats),
				LastActivity: isoMicros(rp.NewestMicros), OldestMessage: isoMicros(rp.OldestMicros), NewestMessage: isoMicros(rp.NewestMicros)}
			p.Cursor.TotalConsumed = d.Consumed[i]
			out.Partitions = append(out.Partitions, p)
		}
		s.sendValue(ctx, fasthttp.StatusOK, out)
	})
}

type recentMessageJSON struct {
	ID            string    `json:"id"`
	TransactionID string    `json:"transactionId"`
	PartitionID   string    `json:"partitionId"`
	QueuePath     string    `json:"queuePath"`
	Queue         string    `json:"queue"`
	Partition     string    `json:"partition"`
	Status        string    `json:"status"`
	CreatedAt     isoMicros `json:"createdAt"`
}

// statusQueueMessages serves GET /api/v1/status/queues/:queue/messages: the
// queue's newest messages (limit 50, offset 0), an array; unknown → 404.
func (s *Server) statusQueueMessages(ctx *fasthttp.RequestCtx, name string) {
	s.withStatus(ctx, func(sb statusBackend) {
		q := queryArgs{ctx.QueryArgs()}
		msgs, ok := sb.RecentMessages(name, int(min(max(q.integer("limit", 50), 1), 1000)), int(min(max(q.integer("offset", 0), 0), 10000)))
		if !ok {
			writeError(ctx, fasthttp.StatusNotFound, "Queue not found")
			return
		}
		out := make([]recentMessageJSON, len(msgs))
		for i, m := range msgs {
			out[i] = recentMessageJSON{ID: m.ID, TransactionID: m.TransactionID, PartitionID: m.PartitionID, QueuePath: name + "/" + m.Partition,
				Queue: name, Partition: m.Partition, Status: m.Status, CreatedAt: isoMicros(m.CreatedAtMicros)}
		}
		s.sendValue(ctx, fasthttp.StatusOK, out)
	})
}

type dataPoint struct {
	Timestamp bucketTime `json:"timestamp"`
	Messages  uint64     `json:"messages"` // ingested, as Queen's chart plots
	Ingested  uint64     `json:"ingested"`
	Popped    uint64     `json:"popped"`
	Processed uint64     `json:"processed"`
	Errors    uint64     `json:"errors"`
	AvgLagMs  float64    `json:"avgLagMs"`
	MaxLagMs  uint64     `json:"maxLagMs"`
}

// statusAnalytics serves GET /api/v1/status/analytics: interval minute, hour
// (default) or day; from (default now - 24 h) to now; queue, namespace, task.
func (s *Server) statusAnalytics(ctx *fasthttp.RequestCtx) {
	s.withStatus(ctx, func(sb statusBackend) {
		q := queryArgs{ctx.QueryArgs()}
		from, to := timeRange(q, time.Now(), 24*time.Hour)
		iv := analytics.ParseInterval(q.str("interval"), analytics.Hour)
		bs := sb.Series(report.SeriesQuery{Interval: iv, From: from, To: to, Queue: q.str("queue"), Namespace: q.str("namespace"), Task: q.str("task")})
		out := struct {
			DataPoints []dataPoint `json:"dataPoints"`
			Interval   string      `json:"interval"`
			From       isoTime     `json:"from"`
			To         isoTime     `json:"to"`
		}{DataPoints: make([]dataPoint, len(bs)), Interval: [...]string{"minute", "hour", "day"}[iv], From: isoTime(from), To: isoTime(to)}
		for i, b := range bs {
			out.DataPoints[i] = dataPoint{Timestamp: bucketTime(b.Start), Messages: b.Ingested, Ingested: b.Ingested, Popped: b.Popped,
				Processed: b.Processed, Errors: b.Errors, AvgLagMs: round2(b.AvgLagMs()), MaxLagMs: b.LagMaxMs}
		}
		s.sendValue(ctx, fasthttp.StatusOK, out)
	})
}

// statusBuffers serves GET /api/v1/status/buffers: comb has no push buffer
// (a push answers once durable), so nothing is pending or failed.
func (s *Server) statusBuffers(ctx *fasthttp.RequestCtx) {
	s.sendValue(ctx, fasthttp.StatusOK, struct {
		Pending   int          `json:"pending"`
		Failed    int          `json:"failed"`
		DBHealthy bool         `json:"dbHealthy"`
		Worker    statusWorker `json:"worker"`
	}{DBHealthy: s.b.Healthy(), Worker: s.worker(time.Now())})
}
