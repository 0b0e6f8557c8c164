package httpapi

import (
	"math"
	"strconv"

	"github.com/combmq/comb/report"
	"github.com/valyala/fasthttp"
)

// The read-only GET /api/v1/resources/* routes (spec 8.4; routes.go) count from the broker's
// in-memory marks (approximate is allowed); timestamps have 3 fractional digits (spec 0.4).

// Shapes of spec 8.4, field order as the wire has it.

type lagJSON struct {
	Avg    float3 `json:"avg"`
	Median float3 `json:"median"`
	Min    float3 `json:"min"`
	Max    float3 `json:"max"`
}

func lagOf(l report.LagStats) lagJSON {
	return lagJSON{float3(l.Avg), float3(l.Median), float3(l.Min), float3(l.Max)}
}

type overviewJSON struct {
	Queues     int        `json:"queues"`
	Partitions int        `json:"partitions"`
	Namespaces int        `json:"namespaces"`
	Tasks      int        `json:"tasks"`
	Messages   countsJSON `json:"messages"`
	Lag        struct {
		Time   lagJSON `json:"time"`
		Offset lagJSON `json:"offset"`
	} `json:"lag"`
	Throughput struct {
		IngestedPerSecond  float3 `json:"ingestedPerSecond"`
		ProcessedPerSecond float3 `json:"processedPerSecond"`
	} `json:"throughput"`
	Timestamp isoMicros `json:"timestamp"`
	StatsAge  int       `json:"statsAge"` // computed on request: never stale
}

func (s *Server) resourcesOverview(ctx *fasthttp.RequestCtx) {
	o := s.rep.ResourcesOverview()
	out := overviewJSON{Queues: o.Queues, Partitions: o.Partitions, Namespaces: o.Namespaces, Tasks: o.Tasks,
		Messages: counts(o.Messages), Timestamp: isoMicros(o.NowMicros)}
	out.Lag.Time, out.Lag.Offset = lagOf(o.TimeLagSeconds), lagOf(o.OffsetLag)
	out.Throughput.IngestedPerSecond, out.Throughput.ProcessedPerSecond = float3(o.IngestedPerSecond), float3(o.ProcessedPerSecond)
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

// queueHeadJSON opens a queue object. The labels are strings, "" when unset, as configure
// echoes them (spec 1.3, 2.4).
type queueHeadJSON struct {
	ID        wireString `json:"id"`
	Name      wireString `json:"name"`
	Namespace wireString `json:"namespace"`
	Task      wireString `json:"task"`
	CreatedAt isoMicros  `json:"createdAt"`
}

func queueHead(r report.ResourceQueue) queueHeadJSON {
	return queueHeadJSON{wireString(r.ID), wireString(r.Name), wireString(r.Namespace), wireString(r.Task), isoMicros(r.CreatedAtMicros)}
}

type shortCountsJSON struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
}

type resourceQueueJSON struct {
	queueHeadJSON
	Partitions int             `json:"partitions"`
	Messages   shortCountsJSON `json:"messages"`
}

func (s *Server) resourceQueues(ctx *fasthttp.RequestCtx) {
	q := queryArgs{ctx.QueryArgs()}
	f := report.ResourceFilter{
		Namespace: q.str("namespace"),
		Task:      q.str("task"),
		Limit:     int(min(max(q.integer("limit", 0), 0), 1<<31)),
		Offset:    int(min(max(q.integer("offset", 0), 0), 1<<31)),
	}
	rows := s.rep.ResourceQueues(f)
	out := struct {
		Queues []resourceQueueJSON `json:"queues"`
	}{make([]resourceQueueJSON, len(rows))}
	for i, r := range rows {
		out.Queues[i] = resourceQueueJSON{queueHead(r), r.Partitions, shortCountsJSON{r.Messages.Total, r.Messages.Pending, r.Messages.Processing}}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

type resourcePartitionJSON struct {
	ID            wireString `json:"id"`
	Name          wireString `json:"name"`
	CreatedAt     isoMicros  `json:"createdAt"`
	Stats         countsJSON `json:"stats"`
	OldestMessage isoMicros  `json:"oldestMessage"`
	NewestMessage isoMicros  `json:"newestMessage"`
}

// Page bounds of the queue detail routes' partition lists (docs/api.md, "Queue detail"): Queen
// lists every partition; at 100,000 partitions that was a 46 MB answer.
const (
	defaultPartitionPage = 10000
	maxPartitionPage     = 10000
)

// partitionPage reads limit and offset of a queue detail route: at most maxPartitionPage
// partitions, oldest first; the head's partition count says how many there are.
func partitionPage(ctx *fasthttp.RequestCtx) report.PartitionPage {
	q := queryArgs{ctx.QueryArgs()}
	limit := q.integer("limit", defaultPartitionPage)
	if limit < 1 || limit > maxPartitionPage {
		limit = maxPartitionPage
	}
	return report.PartitionPage{Offset: int(min(max(q.integer("offset", 0), 0), 1<<31)), Limit: int(limit)}
}

func (s *Server) resourceQueue(ctx *fasthttp.RequestCtx, name string) {
	d, ok := s.rep.ResourceQueue(name, partitionPage(ctx))
	if !ok {
		writeError(ctx, fasthttp.StatusNotFound, "Queue not found")
		return
	}
	out := struct {
		queueHeadJSON
		Partitions     []resourcePartitionJSON `json:"partitions"`
		PartitionCount int                     `json:"partitionCount"` // every partition; the list is one page
		Totals         countsJSON              `json:"totals"`
	}{queueHead(d.ResourceQueue), make([]resourcePartitionJSON, len(d.PartitionList)), d.Partitions, counts(d.Messages)}
	for i, rp := range d.PartitionList {
		out.Partitions[i] = resourcePartitionJSON{wireString(rp.ID), wireString(rp.Name), isoMicros(rp.CreatedAtMicros), counts(rp.Stats),
			isoMicros(rp.OldestMicros), isoMicros(rp.NewestMicros)}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

// resourceLabels serves the namespace and task lists: {"<list>":[{"<key>":name,...}]}; the
// key differs per list, so each row is its label's object plus the shared counts.
func (s *Server) resourceLabels(ctx *fasthttp.RequestCtx, list, key string, labels []report.ResourceLabel) {
	type counts2 struct {
		Total   int64 `json:"total"`
		Pending int64 `json:"pending"`
	}
	type row struct {
		Namespace  *wireString `json:"namespace,omitempty"`
		Task       *wireString `json:"task,omitempty"`
		Queues     int         `json:"queues"`
		Partitions int         `json:"partitions"`
		Messages   counts2     `json:"messages"`
	}
	rows := make([]row, len(labels))
	for i, l := range labels {
		name := wireString(l.Name)
		rows[i] = row{Queues: l.Queues, Partitions: l.Partitions, Messages: counts2{l.Messages.Total, l.Messages.Pending}}
		if key == "namespace" {
			rows[i].Namespace = &name
		} else {
			rows[i].Task = &name
		}
	}
	s.sendValue(ctx, fasthttp.StatusOK, map[string][]row{list: rows})
}

// appendFloat writes v rounded to 3 decimals (NaN and ±Inf as 0: JSON has neither).
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
}
