package httpapi

import (
	"github.com/combmq/comb/names"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// defaultMinLagSeconds is GET /api/v1/consumer-groups/lagging without minLagSeconds: one hour,
// the value the spec's example and Queen's dashboard use (spec 7.6).
const defaultMinLagSeconds = 3600

// groupDetail serves GET /api/v1/consumer-groups/:group (spec 7.6): an object keyed by queue
// name, each with the group's partitions; `{}` for an unknown group. lastConsumedAt is the
// createdAt of the message the cursor stands on (comb records no ack times), null when none.
func (s *Server) groupDetail(ctx *fasthttp.RequestCtx, group string) {
	if m := nameMsg(names.ConsumerGroup, group); m != "" {
		badRequest(ctx, m)
		return
	}
	rows := s.rep.GroupDetail(group)
	out := keyed[groupQueueJSON]{}
	for i := range rows {
		r := &rows[i]
		if i == 0 || r.Queue != rows[i-1].Queue {
			out = append(out, keyedField[groupQueueJSON]{Key: r.Queue})
		}
		q := &out[len(out)-1].Value
		q.Partitions = append(q.Partitions, groupPartitionJSON{Partition: wireString(r.Partition), WorkerID: nullString(r.WorkerID),
			LastConsumedAt: isoMicros(r.LastConsumedAtMicros), TotalConsumed: r.TotalConsumed, OffsetLag: r.OffsetLag,
			TimeLagSeconds: r.TimeLagSeconds, LeaseActive: r.LeaseActive})
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

type groupQueueJSON struct {
	Partitions []groupPartitionJSON `json:"partitions"`
}

type groupPartitionJSON struct {
	Partition      wireString `json:"partition"`
	WorkerID       nullString `json:"workerId"`
	LastConsumedAt isoMicros  `json:"lastConsumedAt"`
	TotalConsumed  int64      `json:"totalConsumed"`
	OffsetLag      int64      `json:"offsetLag"`
	TimeLagSeconds int64      `json:"timeLagSeconds"`
	LeaseActive    bool       `json:"leaseActive"`
}

// laggingGroups serves GET /api/v1/consumer-groups/lagging?minLagSeconds=N (spec 7.6): an array
// of snake_case rows whose time lag is above N seconds, by lag descending; `[]` when none.
func (s *Server) laggingGroups(ctx *fasthttp.RequestCtx) {
	minLag := queryArgs{ctx.QueryArgs()}.integer("minLagSeconds", defaultMinLagSeconds)
	rows := s.rep.LaggingPartitions(minLag)
	out := make([]laggingJSON, len(rows))
	for i := range rows {
		r := &rows[i]
		out[i] = laggingJSON{Group: wireString(r.Group), Queue: wireString(r.Queue), Partition: wireString(r.Partition),
			PartitionID: wireString(r.PartitionID), WorkerID: nullString(r.WorkerID), OffsetLag: r.OffsetLag,
			TimeLagSeconds: r.TimeLagSeconds, LagHours: fixed2(float64(r.TimeLagSeconds) / 3600),
			OldestUnconsumedAt: isoMicros(r.OldestUnconsumedAtMicros), LastConsumedAt: isoMicros(r.LastConsumedAtMicros)}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

type laggingJSON struct {
	Group              wireString `json:"consumer_group"`
	Queue              wireString `json:"queue_name"`
	Partition          wireString `json:"partition_name"`
	PartitionID        wireString `json:"partition_id"`
	WorkerID           nullString `json:"worker_id"`
	OffsetLag          int64      `json:"offset_lag"`
	TimeLagSeconds     int64      `json:"time_lag_seconds"`
	LagHours           fixed2     `json:"lag_hours"`
	OldestUnconsumedAt isoMicros  `json:"oldest_unconsumed_at"`
	LastConsumedAt     isoMicros  `json:"last_consumed_at"`
}

// setSubscription serves POST /api/v1/consumer-groups/:group/subscription (spec 7.5): body
// {"subscriptionTimestamp":"<ISO-8601>"}; a missing or non-string value is 400 with the spec's
// text, an unparsable one 400 "Invalid subscriptionTimestamp: must be ISO-8601".
func (s *Server) setSubscription(ctx *fasthttp.RequestCtx, group string) {
	if m := nameMsg(names.ConsumerGroup, group); m != "" {
		badRequest(ctx, m)
		return
	}
	const missing = "Missing subscriptionTimestamp in request body"
	body := ctx.PostBody()
	if len(body) == 0 {
		badRequest(ctx, missing)
		return
	}
	parser, v, ok := parseJSON(ctx, b2s(body))
	if !ok {
		return
	}
	tsv := v.Get("subscriptionTimestamp")
	text := ""
	if tsv != nil && tsv.Type() == fastjson.TypeString {
		text = string(tsv.GetStringBytes())
	}
	parserPool.Put(parser)
	if text == "" {
		badRequest(ctx, missing)
		return
	}
	ts, ok := parseISO(text)
	if !ok {
		badRequest(ctx, "Invalid subscriptionTimestamp: must be ISO-8601")
		return
	}
	n, err := s.b.SetSubscriptionTimestamp(group, ts)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"consumerGroup":`...)
	b = appendString(b, group)
	b = append(b, `,"newTimestamp":`...)
	b = appendTimeMicros(b, ts, 3)
	b = append(b, `,"rowsUpdated":`...)
	b = appendInt(b, int64(n))
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// statsRefresh serves POST /api/v1/stats/refresh (spec 8.4): comb computes its counts when asked,
// so there is nothing to refresh.
func (s *Server) statsRefresh(ctx *fasthttp.RequestCtx) {
	p := getBuf()
	*p = append(*p, `{"success":true}`...)
	sendJSON(ctx, fasthttp.StatusOK, p)
}
