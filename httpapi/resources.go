package httpapi

import (
	"math"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// The read-only GET /api/v1/resources/* routes (spec 8.4; routes.go) count from the broker's
// in-memory marks (approximate is allowed); timestamps have 3 fractional digits (spec 0.4).

func (s *Server) resourcesOverview(ctx *fasthttp.RequestCtx) {
	o := s.b.ResourcesOverview()
	p := getBuf()
	b := append(*p, `{"queues":`...)
	b = appendInt(b, int64(o.Queues))
	b = append(b, `,"partitions":`...)
	b = appendInt(b, int64(o.Partitions))
	b = append(b, `,"namespaces":`...)
	b = appendInt(b, int64(o.Namespaces))
	b = append(b, `,"tasks":`...)
	b = appendInt(b, int64(o.Tasks))
	b = append(b, `,"messages":`...)
	b = appendCounts(b, o.Messages)
	b = append(b, `,"lag":{"time":`...)
	b = appendLag(b, o.TimeLagSeconds)
	b = append(b, `,"offset":`...)
	b = appendLag(b, o.OffsetLag)
	b = append(b, `},"throughput":{"ingestedPerSecond":`...)
	b = appendFloat(b, o.IngestedPerSecond)
	b = append(b, `,"processedPerSecond":`...)
	b = appendFloat(b, o.ProcessedPerSecond)
	b = append(b, `},"timestamp":`...)
	b = appendTimeMicros(b, o.NowMicros, 3)
	*p = append(b, `,"statsAge":0}`...) // computed on request: never stale
	sendJSON(ctx, fasthttp.StatusOK, p)
}

func (s *Server) resourceQueues(ctx *fasthttp.RequestCtx) {
	q := queryArgs{ctx.QueryArgs()}
	f := broker.ResourceFilter{
		Namespace: q.str("namespace"),
		Task:      q.str("task"),
		Limit:     int(min(max(q.integer("limit", 0), 0), 1<<31)),
		Offset:    int(min(max(q.integer("offset", 0), 0), 1<<31)),
	}
	rows := s.b.ResourceQueues(f)
	p := getBuf()
	b := append(*p, `{"queues":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQueueHead(b, r)
		b = append(b, `,"partitions":`...)
		b = appendInt(b, int64(r.Partitions))
		b = append(b, `,"messages":{"total":`...)
		b = appendInt(b, r.Messages.Total)
		b = append(b, `,"pending":`...)
		b = appendInt(b, r.Messages.Pending)
		b = append(b, `,"processing":`...)
		b = appendInt(b, r.Messages.Processing)
		b = append(b, "}}"...)
	}
	*p = append(b, "]}"...)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

func (s *Server) resourceQueue(ctx *fasthttp.RequestCtx, name string) {
	d, ok := s.b.ResourceQueue(name)
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, "Queue not found")
		return
	}
	p := getBuf()
	b := appendQueueHead(*p, d.ResourceQueue)
	b = append(b, `,"partitions":[`...)
	for i, rp := range d.PartitionList {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, rp.ID)
		b = append(b, `,"name":`...)
		b = appendString(b, rp.Name)
		b = append(b, `,"createdAt":`...)
		b = appendTimeMicros(b, rp.CreatedAtMicros, 3)
		b = append(b, `,"stats":`...)
		b = appendCounts(b, rp.Stats)
		b = append(b, `,"oldestMessage":`...)
		b = appendTimeOrNull(b, rp.OldestMicros, 3)
		b = append(b, `,"newestMessage":`...)
		b = appendTimeOrNull(b, rp.NewestMicros, 3)
		b = append(b, '}')
	}
	b = append(b, `],"totals":`...)
	b = appendCounts(b, d.Messages)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

func (s *Server) resourceLabels(ctx *fasthttp.RequestCtx, list, key string, labels []broker.ResourceLabel) {
	p := getBuf()
	b := append(*p, `{"`...)
	b = append(b, list...)
	b = append(b, `":[`...)
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = appendString(b, l.Name)
		b = append(b, `,"queues":`...)
		b = appendInt(b, int64(l.Queues))
		b = append(b, `,"partitions":`...)
		b = appendInt(b, int64(l.Partitions))
		b = append(b, `,"messages":{"total":`...)
		b = appendInt(b, l.Messages.Total)
		b = append(b, `,"pending":`...)
		b = appendInt(b, l.Messages.Pending)
		b = append(b, "}}"...)
	}
	*p = append(b, "]}"...)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendQueueHead opens a queue object with id, name, namespace, task and createdAt. The labels
// are strings, "" when unset, as configure echoes them (spec 1.3, 2.4).
func appendQueueHead(b []byte, r broker.ResourceQueue) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"namespace":`...)
	b = appendString(b, r.Namespace)
	b = append(b, `,"task":`...)
	b = appendString(b, r.Task)
	b = append(b, `,"createdAt":`...)
	return appendTimeMicros(b, r.CreatedAtMicros, 3)
}

// appendCounts writes {total,pending,processing,completed,failed,deadLetter}.
func appendCounts(b []byte, c broker.MessageCounts) []byte {
	b = append(b, `{"total":`...)
	b = appendInt(b, c.Total)
	b = append(b, `,"pending":`...)
	b = appendInt(b, c.Pending)
	b = append(b, `,"processing":`...)
	b = appendInt(b, c.Processing)
	b = append(b, `,"completed":`...)
	b = appendInt(b, c.Completed)
	b = append(b, `,"failed":`...)
	b = appendInt(b, c.Failed)
	b = append(b, `,"deadLetter":`...)
	b = appendInt(b, c.DeadLetter)
	return append(b, '}')
}

func appendLag(b []byte, l broker.LagStats) []byte {
	b = append(b, `{"avg":`...)
	b = appendFloat(b, l.Avg)
	b = append(b, `,"median":`...)
	b = appendFloat(b, l.Median)
	b = append(b, `,"min":`...)
	b = appendFloat(b, l.Min)
	b = append(b, `,"max":`...)
	b = appendFloat(b, l.Max)
	return append(b, '}')
}

// appendFloat writes v rounded to 3 decimals (NaN and ±Inf as 0: JSON has neither).
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
}
