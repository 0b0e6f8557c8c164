package httpapi

import (
	"sort"
	"time"

	"github.com/combmq/comb/report"
	"github.com/valyala/fasthttp"
)

// The dashboard's chart routes, GET /api/v1/analytics/* (spec 8.7, P2): from,
// to (default the last hour) and queue. Each answers an object with
// timeRange, bucketMinutes and its series, with Queen's field names. comb
// has what it counts per queue and minute (broker/maint_series.go, read by report/series.go); what it
// has no source for (per-worker event loops, CPU samples, parked replicas,
// retention runs) is an empty series, which the spec allows. Queen's own
// queue-lag is the exception: a bare array, as Queen answers (spec 8.7).

type seriesEnvelope struct {
	TimeRange     timeRangeJSON `json:"timeRange"`
	BucketMinutes int64         `json:"bucketMinutes"`
}

func analyticsQuery(ctx *fasthttp.RequestCtx) (report.SeriesQuery, seriesEnvelope) {
	q := queryArgs{ctx.QueryArgs()}
	from, to := timeRange(q, time.Now(), time.Hour)
	iv := bucketFor(from, to)
	return report.SeriesQuery{Interval: iv, From: from, To: to, Queue: q.str("queue")},
		seriesEnvelope{TimeRange: timeRangeJSON{isoTime(from), isoTime(to)}, BucketMinutes: bucketMinutes(iv)}
}

// workerPoint is one bucket of worker-metrics' timeSeries: comb is one worker,
// so these are the all-queues series.
type workerPoint struct {
	Timestamp     bucketTime `json:"timestamp"`
	PushMessages  uint64     `json:"pushMessages"`
	PopMessages   uint64     `json:"popMessages"`
	AckSuccess    uint64     `json:"ackSuccess"`
	AckFailed     uint64     `json:"ackFailed"`
	PushPerSecond float64    `json:"pushPerSecond"`
	PopPerSecond  float64    `json:"popPerSecond"`
	AckPerSecond  float64    `json:"ackPerSecond"`
	AvgLagMs      float64    `json:"avgLagMs"`
	MaxLagMs      uint64     `json:"maxLagMs"`
	DLQCount      uint64     `json:"dlqCount"`
	DBErrors      uint64     `json:"dbErrors"`
}

func (s *Server) workerMetrics(ctx *fasthttp.RequestCtx) {
	s.withStatus(ctx, func(sb statusBackend) {
		sq, env := analyticsQuery(ctx)
		bs := sb.Series(sq)
		secs := float64(sq.Interval.Seconds())
		ts := make([]workerPoint, len(bs))
		for i, b := range bs { // newest first, as Queen's dashboard reverses them
			ts[len(bs)-1-i] = workerPoint{Timestamp: bucketTime(b.Start), PushMessages: b.Ingested, PopMessages: b.Popped,
				AckSuccess: b.Processed, AckFailed: b.Errors, PushPerSecond: round2(float64(b.Ingested) / secs),
				PopPerSecond: round2(float64(b.Popped) / secs), AckPerSecond: round2(float64(b.Processed+b.Errors) / secs),
				AvgLagMs: round2(b.AvgLagMs()), MaxLagMs: b.LagMaxMs, DLQCount: b.DeadLettered}
		}
		s.sendValue(ctx, fasthttp.StatusOK, struct {
			seriesEnvelope
			TimeSeries []workerPoint  `json:"timeSeries"`
			Workers    []statusWorker `json:"workers"`
		}{env, ts, []statusWorker{s.worker(time.Now())}})
	})
}

// queueOpsPoint is one (bucket, queue) row of queue-ops; the counters comb
// does not keep per queue (requests, empty pops, transactions, partitions
// created) are 0.
type queueOpsPoint struct {
	Bucket            bucketTime `json:"bucket"`
	QueueName         string     `json:"queueName"`
	PushRequests      uint64     `json:"pushRequests"`
	PushMessages      uint64     `json:"pushMessages"`
	PopMessages       uint64     `json:"popMessages"`
	PopEmpty          uint64     `json:"popEmpty"`
	AckRequests       uint64     `json:"ackRequests"`
	AckSuccess        uint64     `json:"ackSuccess"`
	AckFailed         uint64     `json:"ackFailed"`
	Transactions      uint64     `json:"transactions"`
	PartitionsCreated uint64     `json:"partitionsCreated"`
	PartitionsDeleted uint64     `json:"partitionsDeleted"`
	AvgLagMs          float64    `json:"avgLagMs"`
	MaxLagMs          uint64     `json:"maxLagMs"`
	PushPerSecond     float64    `json:"pushPerSecond"`
	PopPerSecond      float64    `json:"popPerSecond"`
	AckPerSecond      float64    `json:"ackPerSecond"`
	EmptyPerSecond    float64    `json:"emptyPerSecond"`
	ParkedCount       float64    `json:"parkedCount"`
}

func (s *Server) queueOps(ctx *fasthttp.RequestCtx) {
	s.withStatus(ctx, func(sb statusBackend) {
		sq, env := analyticsQuery(ctx)
		secs := float64(sq.Interval.Seconds())
		series, queues := []queueOpsPoint{}, []string{}
		for _, qs := range sb.SeriesByQueue(sq) {
			queues = append(queues, qs.Name)
			for _, b := range qs.Buckets {
				series = append(series, queueOpsPoint{Bucket: bucketTime(b.Start), QueueName: qs.Name, PushMessages: b.Ingested,
					PopMessages: b.Popped, AckSuccess: b.Processed, AckFailed: b.Errors, AvgLagMs: round2(b.AvgLagMs()), MaxLagMs: b.LagMaxMs,
					PushPerSecond: round2(float64(b.Ingested) / secs), PopPerSecond: round2(float64(b.Popped) / secs),
					AckPerSecond: round2(float64(b.Processed+b.Errors) / secs)})
			}
		}
		s.sendValue(ctx, fasthttp.StatusOK, struct {
			seriesEnvelope
			Series []queueOpsPoint `json:"series"`
			Queues []string        `json:"queues"`
		}{env, series, queues})
	})
}

// queueLagPoint is one (bucket, queue) row of queue-lag, Queen's element
// (get_queue_lag_v1): buckets with pops only.
type queueLagPoint struct {
	BucketTime bucketTime `json:"bucketTime"`
	QueueName  string     `json:"queueName"`
	PopCount   uint64     `json:"popCount"`
	AvgLagMs   float64    `json:"avgLagMs"`
	MaxLagMs   uint64     `json:"maxLagMs"`
}

// queueLag serves GET /api/v1/analytics/queue-lag: a bare JSON array, as
// Queen answers and its dashboard iterates (spec 8.7, corrected), newest
// bucket first, then by queue name; [] when nothing was popped.
func (s *Server) queueLag(ctx *fasthttp.RequestCtx) {
	s.withStatus(ctx, func(sb statusBackend) {
		sq, _ := analyticsQuery(ctx)
		rows := []queueLagPoint{}
		var starts []time.Time
		for _, qs := range sb.SeriesByQueue(sq) {
			for _, b := range qs.Buckets {
				if b.Popped == 0 {
					continue
				}
				rows = append(rows, queueLagPoint{BucketTime: bucketTime(b.Start), QueueName: qs.Name, PopCount: b.Popped,
					AvgLagMs: round2(b.AvgLagMs()), MaxLagMs: b.LagMaxMs})
				starts = append(starts, b.Start)
			}
		}
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool {
			ia, ib := idx[a], idx[b]
			if !starts[ia].Equal(starts[ib]) {
				return starts[ia].After(starts[ib])
			}
			return rows[ia].QueueName < rows[ib].QueueName
		})
		out := make([]queueLagPoint, len(rows))
		for i, j := range idx {
			out[i] = rows[j]
		}
		s.sendValue(ctx, fasthttp.StatusOK, out)
	})
}

// emptySeries answers a chart route comb has no source for: the envelope and
// empty arrays under the names Queen's dashboard reads.
func (s *Server) emptySeries(ctx *fasthttp.RequestCtx, arrays ...string) {
	if !validTimeRange(ctx) {
		return
	}
	_, env := analyticsQuery(ctx)
	out := map[string]any{"timeRange": env.TimeRange, "bucketMinutes": env.BucketMinutes}
	for _, a := range arrays {
		out[a] = []any{}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}
