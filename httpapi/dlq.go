package httpapi

import (
	"github.com/combmq/comb/report"
	"github.com/valyala/fasthttp"
)

// defaultDLQLimit is GET /api/v1/dlq's page size when `limit` is absent or below 1 (spec 8.6).
const defaultDLQLimit = 100

// maxDLQLimit bounds one page so a request cannot ask for the whole DLQ at once.
const maxDLQLimit = 10000

// dlq serves GET /api/v1/dlq (spec 8.6, 11 #40): every filter honoured, `total` always sent.
// from/to are ISO-8601 bounds on failedAt; an unparsable one is a 400.
func (s *Server) dlq(ctx *fasthttp.RequestCtx) {
	q := queryArgs{ctx.QueryArgs()}
	f := report.DLQFilter{
		Queue:     q.str("queue"),
		Group:     q.str("consumerGroup"),
		Partition: q.str("partition"),
		Limit:     int(min(q.integer("limit", defaultDLQLimit), maxDLQLimit)),
		Offset:    int(min(max(q.integer("offset", 0), 0), 1<<31)),
	}
	if f.Limit < 1 {
		f.Limit = defaultDLQLimit
	}
	for _, bound := range []struct {
		key string
		dst *int64
	}{{"from", &f.FromMicros}, {"to", &f.ToMicros}} {
		text := q.str(bound.key)
		if text == "" {
			continue
		}
		ts, ok := parseISO(text)
		if !ok {
			badRequest(ctx, "Invalid "+bound.key+" timestamp: must be ISO-8601")
			return
		}
		*bound.dst = ts
	}
	entries, total, err := s.rep.DLQ(f)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	*p = appendDLQ(*p, entries, total, f.Limit, f.Offset)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

func appendDLQ(b []byte, entries []report.DLQEntry, total, limit, offset int) []byte {
	b = append(b, `{"messages":[`...)
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, e.ID)
		b = append(b, `,"transactionId":`...)
		b = appendString(b, e.TransactionID)
		b = append(b, `,"partitionId":`...)
		b = appendString(b, e.PartitionID)
		b = append(b, `,"queue":`...)
		b = appendString(b, e.Queue)
		b = append(b, `,"partition":`...)
		b = appendString(b, e.Partition)
		b = append(b, `,"consumerGroup":`...)
		b = appendString(b, e.Group)
		b = append(b, `,"errorMessage":`...)
		b = appendStringOrNull(b, e.ErrorMessage)
		b = append(b, `,"retryCount":`...)
		b = appendInt(b, e.RetryCount)
		b = append(b, `,"data":`...)
		b = appendRaw(b, e.Payload)
		if e.PayloadError != "" {
			b = appendDecryptionError(b, e.PayloadError)
		}
		b = append(b, `,"producerSub":`...)
		b = appendStringOrNull(b, e.ProducerSub)
		b = append(b, `,"createdAt":`...)
		b = appendTimeOrNull(b, e.CreatedAtMicros, 3)
		b = append(b, `,"failedAt":`...)
		b = appendTimeOrNull(b, e.FailedAtMicros, 3)
		b = append(b, '}')
	}
	b = append(b, `],"total":`...)
	b = appendInt(b, int64(total))
	b = append(b, `,"pagination":{"limit":`...)
	b = appendInt(b, int64(limit))
	b = append(b, `,"offset":`...)
	b = appendInt(b, int64(offset))
	return append(b, '}', '}')
}
