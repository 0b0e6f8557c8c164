package httpapi

import (
	"sort"
	"strings"
	"time"

	"github.com/combmq/comb/names"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// defaultExtendSeconds is what an absent, empty, `{}` or non-positive `seconds` means (spec 6).
const defaultExtendSeconds = 60

// isoLayouts are the ISO-8601 forms accepted for timestamps in requests, most common first.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseISO parses an ISO-8601 timestamp into µs since the Unix epoch; no zone means UTC.
func parseISO(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), true
		}
	}
	return 0, false
}

// extendLease serves POST /api/v1/lease/:leaseId/extend: always a 200 object (spec 6, 11 #6,
// #7) once the body is read. An unparsable body is 400 (spec 0.1), and so is a `seconds` that is
// not an integer (a fraction, 1e30, "abc", true): it used to mean 60 s without a word (issue
// 10), so a client asking for 1.5 h as 5400.5 got a minute. Integral numbers and numeric
// strings are read as configure reads its options (spec 2.2); absent, null and non-positive
// values mean 60 (spec 6); the broker caps the rest at lease.MaxLeaseSeconds.
func (s *Server) extendLease(ctx *fasthttp.RequestCtx, leaseID string) {
	seconds := int64(defaultExtendSeconds)
	if body := ctx.PostBody(); len(strings.TrimSpace(b2s(body))) > 0 {
		parser, v, ok := parseJSON(ctx, b2s(body))
		if !ok {
			return
		}
		n, ok := int64(0), true
		if sv := v.Get("seconds"); sv != nil && sv.Type() != fastjson.TypeNull {
			n, ok = jsonInt(sv)
		}
		parserPool.Put(parser)
		if !ok {
			badRequest(ctx, "seconds must be an integer")
			return
		}
		if n > 0 {
			seconds = n
		}
	}
	res := s.b.ExtendLease(leaseID, seconds)
	if res.Err != nil {
		s.fail(ctx, res.Err) // not renewed: the client retries a 5xx (issue 10)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":`...)
	b = appendBool(b, res.Renewed > 0)
	b = append(b, `,"renewed":`...)
	b = appendInt(b, int64(res.Renewed))
	b = append(b, `,"leaseId":`...)
	b = appendString(b, leaseID)
	b = append(b, `,"newExpiresAt":`...)
	b = appendTimeOrNull(b, res.NewExpiresAtMicros, 3)
	b = append(b, `,"expiresAt":`...)
	b = appendTimeOrNull(b, res.NewExpiresAtMicros, 3)
	b = append(b, `,"error":`...)
	b = appendStringOrNull(b, res.Error)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// checkGroupQueue validates the :group and :queue of the consumer-group routes (spec 7).
func checkGroupQueue(group, queue string) string {
	if m := nameMsg(names.ConsumerGroup, group); m != "" {
		return m
	}
	if queue != "" {
		return nameMsg(names.Queue, queue)
	}
	return ""
}

// seek serves POST /api/v1/consumer-groups/:group/queues/:queue/seek (spec 7.1).
func (s *Server) seek(ctx *fasthttp.RequestCtx, group, queue string) {
	if m := checkGroupQueue(group, queue); m != "" {
		badRequest(ctx, m)
		return
	}
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	parser, v, ok := parseJSON(ctx, b2s(body))
	if !ok {
		return
	}
	toEnd := v.Get("toEnd") != nil && v.Get("toEnd").Type() == fastjson.TypeTrue
	tsv := v.Get("timestamp")
	tsText := ""
	if tsv != nil && tsv.Type() == fastjson.TypeString {
		tsText = string(tsv.GetStringBytes())
	}
	hasTS := tsv != nil && tsv.Type() != fastjson.TypeNull
	parserPool.Put(parser)
	var tsMicros int64
	switch {
	case toEnd && hasTS:
		// spec 7.1: exactly one of them.
		badRequest(ctx, "Specify either 'toEnd': true or 'timestamp', not both")
		return
	case toEnd:
	case !hasTS:
		badRequest(ctx, "Must specify either 'toEnd': true or 'timestamp'")
		return
	default:
		if tsMicros, ok = parseISO(tsText); !ok {
			badRequest(ctx, "Invalid timestamp: must be ISO-8601")
			return
		}
	}
	res, err := s.b.Seek(group, queue, toEnd, tsMicros)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"consumerGroup":`...)
	b = appendString(b, group)
	b = append(b, `,"queueName":`...)
	b = appendString(b, queue)
	b = append(b, `,"seekToEnd":`...)
	b = appendBool(b, toEnd)
	b = append(b, `,"targetTimestamp":`...)
	if toEnd {
		b = append(b, "null"...)
	} else {
		b = appendTimeMicros(b, tsMicros, 3)
	}
	b = append(b, `,"partitionsUpdated":`...)
	b = appendInt(b, int64(res.PartitionsUpdated))
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// seekPartition serves POST …/partitions/:partition/seek (spec 7.2): to the end, body ignored;
// an unknown partition is the broker's ErrNotFound, so 404 (spec 11 #52).
func (s *Server) seekPartition(ctx *fasthttp.RequestCtx, group, queue, partition string) {
	m := checkGroupQueue(group, queue)
	if m == "" {
		m = nameMsg(names.Partition, partition)
	}
	if m != "" {
		badRequest(ctx, m)
		return
	}
	res, err := s.b.SeekPartition(group, queue, partition)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"consumerGroup":`...)
	b = appendString(b, group)
	b = append(b, `,"queueName":`...)
	b = appendString(b, queue)
	b = append(b, `,"partitionName":`...)
	b = appendString(b, partition)
	b = append(b, `,"updated":`...)
	b = appendBool(b, res.Updated)
	b = append(b, `,"cursorMovedTo":`...)
	b = appendTimeOrNull(b, res.CursorMovedToMicros, 3)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// deleteGroup serves DELETE /api/v1/consumer-groups/:group (queue "", spec 7.3) and
// DELETE …/:group/queues/:queue (spec 7.4). deleteMetadata defaults to true.
func (s *Server) deleteGroup(ctx *fasthttp.RequestCtx, group, queue string) {
	if m := checkGroupQueue(group, queue); m != "" {
		badRequest(ctx, m)
		return
	}
	meta := queryArgs{ctx.QueryArgs()}.boolean("deleteMetadata", true)
	n, err := s.b.DeleteGroup(group, queue, meta)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"consumerGroup":`...)
	b = appendString(b, group)
	if queue != "" {
		b = append(b, `,"queueName":`...)
		b = appendString(b, queue)
	}
	b = append(b, `,"deletedPartitions":`...)
	b = appendInt(b, int64(n))
	b = append(b, `,"metadataDeleted":`...)
	b = appendBool(b, meta)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// deleteQueue serves DELETE /api/v1/resources/queues/:queue (spec 7.7); idempotent.
func (s *Server) deleteQueue(ctx *fasthttp.RequestCtx, queue string) {
	if m := nameMsg(names.Queue, queue); m != "" {
		badRequest(ctx, m)
		return
	}
	existed, err := s.b.DeleteQueue(queue)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"deleted":true,"queue":`...)
	b = appendString(b, queue)
	b = append(b, `,"existed":`...)
	b = appendBool(b, existed)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// listGroups serves GET /api/v1/consumer-groups (spec 7.6): an array sorted by group then
// queue, `[]` when there is none.
func (s *Server) listGroups(ctx *fasthttp.RequestCtx) {
	groups := s.rep.ConsumerGroups()
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].Name != groups[j].Name {
			return groups[i].Name < groups[j].Name
		}
		return groups[i].Queue < groups[j].Queue
	})
	out := make([]groupJSON, len(groups))
	for i := range groups {
		g := &groups[i]
		out[i] = groupJSON{Name: wireString(g.Name), Topics: []wireString{wireString(g.Queue)}, QueueName: wireString(g.Queue),
			Members: g.Members, PartitionsWithLag: g.PartitionsWithLag, TotalLag: g.TotalLag, MaxTimeLag: g.MaxTimeLagSeconds,
			State: wireString(g.State), SubscriptionMode: nullString(g.SubscriptionMode),
			SubscriptionTimestamp: isoMicros(g.SubscriptionMicros), SubscriptionCreatedAt: isoMicros(g.SubscriptionCreatedAt)}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

// groupJSON is one row of GET /api/v1/consumer-groups (spec 7.6).
type groupJSON struct {
	Name                  wireString   `json:"name"`
	Topics                []wireString `json:"topics"`
	QueueName             wireString   `json:"queueName"`
	Members               int          `json:"members"`
	PartitionsWithLag     int          `json:"partitionsWithLag"`
	TotalLag              int64        `json:"totalLag"`
	MaxTimeLag            int64        `json:"maxTimeLag"`
	State                 wireString   `json:"state"`
	SubscriptionMode      nullString   `json:"subscriptionMode"`
	SubscriptionTimestamp isoMicros    `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt isoMicros    `json:"subscriptionCreatedAt"`
}
