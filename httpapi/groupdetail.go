package httpapi

import (
	"strconv"

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
	if m := checkName("Consumer group", group); m != "" {
		badRequest(ctx, m)
		return
	}
	rows := s.b.GroupDetail(group)
	p := getBuf()
	b := append(*p, '{')
	for i := range rows {
		r := &rows[i]
		if i == 0 || r.Queue != rows[i-1].Queue {
			if i > 0 {
				b = append(b, "]},"...)
			}
			b = appendString(b, r.Queue)
			b = append(b, `:{"partitions":[`...)
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"partition":`...)
		b = appendString(b, r.Partition)
		b = append(b, `,"workerId":`...)
		b = appendStringOrNull(b, r.WorkerID)
		b = append(b, `,"lastConsumedAt":`...)
		b = appendTimeOrNull(b, r.LastConsumedAtMicros, 3)
		b = append(b, `,"totalConsumed":`...)
		b = appendInt(b, r.TotalConsumed)
		b = append(b, `,"offsetLag":`...)
		b = appendInt(b, r.OffsetLag)
		b = append(b, `,"timeLagSeconds":`...)
		b = appendInt(b, r.TimeLagSeconds)
		b = append(b, `,"leaseActive":`...)
		b = appendBool(b, r.LeaseActive)
		b = append(b, '}')
	}
	if len(rows) > 0 {
		b = append(b, "]}"...)
	}
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// laggingGroups serves GET /api/v1/consumer-groups/lagging?minLagSeconds=N (spec 7.6): an array
// of snake_case rows whose time lag is above N seconds, by lag descending; `[]` when none.
func (s *Server) laggingGroups(ctx *fasthttp.RequestCtx) {
	minLag := queryArgs{ctx.QueryArgs()}.integer("minLagSeconds", defaultMinLagSeconds)
	rows := s.b.LaggingPartitions(minLag)
	p := getBuf()
	b := append(*p, '[')
	for i := range rows {
		r := &rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"consumer_group":`...)
		b = appendString(b, r.Group)
		b = append(b, `,"queue_name":`...)
		b = appendString(b, r.Queue)
		b = append(b, `,"partition_name":`...)
		b = appendString(b, r.Partition)
		b = append(b, `,"partition_id":`...)
		b = appendString(b, r.PartitionID)
		b = append(b, `,"worker_id":`...)
		b = appendStringOrNull(b, r.WorkerID)
		b = append(b, `,"offset_lag":`...)
		b = appendInt(b, r.OffsetLag)
		b = append(b, `,"time_lag_seconds":`...)
		b = appendInt(b, r.TimeLagSeconds)
		b = append(b, `,"lag_hours":`...)
		b = strconv.AppendFloat(b, float64(r.TimeLagSeconds)/3600, 'f', 2, 64)
		b = append(b, `,"oldest_unconsumed_at":`...)
		b = appendTimeOrNull(b, r.OldestUnconsumedAtMicros, 3)
		b = append(b, `,"last_consumed_at":`...)
		b = appendTimeOrNull(b, r.LastConsumedAtMicros, 3)
		b = append(b, '}')
	}
	*p = append(b, ']')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// setSubscription serves POST /api/v1/consumer-groups/:group/subscription (spec 7.5): body
// {"subscriptionTimestamp":"<ISO-8601>"}; a missing or non-string value is 400 with the spec's
// text, an unparsable one 400 "Invalid subscriptionTimestamp: must be ISO-8601".
func (s *Server) setSubscription(ctx *fasthttp.RequestCtx, group string) {
	if m := checkName("Consumer group", group); m != "" {
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
