package httpapi

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// The /streams/v1 routes (spec 10, issue 12) and the read-side list of queries. Decoding is in
// streams_decode.go; the broker owns every rule and the state store (broker/stream.go).

// streamsFail maps a streams Backend error: ErrConflict is 409 and ErrBadRequest 400, both
// {"success":false,"error"} as the clients read them (client-go protocol.go surfaces the 409's
// error with a reset hint); anything else is fail's mapping.
func (s *Server) streamsFail(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, broker.ErrConflict):
		writeStreamsError(ctx, fasthttp.StatusConflict, err.Error())
	case errors.Is(err, broker.ErrBadRequest):
		streamsBadRequest(ctx, err.Error())
	default:
		s.fail(ctx, err)
	}
}

// streamRegister serves POST /streams/v1/queries: 200 {success, query_id, name, config_hash,
// fresh, reset}, 409 on a changed config_hash without reset (spec 10).
func (s *Server) streamRegister(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	req, msg := decodeStreamQuery(body)
	if msg != "" {
		streamsBadRequest(ctx, msg)
		return
	}
	res, err := s.b.StreamRegister(req)
	if err != nil {
		s.streamsFail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"query_id":`...)
	b = appendString(b, res.QueryID)
	b = append(b, `,"name":`...)
	b = appendString(b, res.Name)
	b = append(b, `,"config_hash":`...)
	b = appendString(b, res.ConfigHash)
	b = append(b, `,"fresh":`...)
	b = appendBool(b, res.Fresh)
	b = append(b, `,"reset":`...)
	b = appendBool(b, res.Reset)
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// streamCycle serves POST /streams/v1/cycle: 200 whether the cycle applied or not (spec 10: a
// failed cycle is success:false with error and nothing applied). Its sink pushes carry
// producerSub as /push's do (spec 1.5).
func (s *Server) streamCycle(ctx *fasthttp.RequestCtx, producerSub string) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	req, msg := decodeStreamCycle(body)
	if msg != "" {
		streamsBadRequest(ctx, msg)
		return
	}
	for i := range req.Push {
		req.Push[i].ProducerSub = producerSub
	}
	res, err := s.b.StreamCycle(req)
	if err != nil {
		s.streamsFail(ctx, err)
		return
	}
	p := getBuf()
	*p = appendStreamCycleResult(*p, &res)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendStreamCycleResult encodes spec 10's cycle answer: push_results are /push's result items
// (the same encoder, spec 1.6); ack_result is null for a cycle without an ack (a window flush).
func appendStreamCycleResult(b []byte, r *broker.StreamCycleResult) []byte {
	b = append(b, `{"success":`...)
	b = appendBool(b, r.Success)
	if !r.Success {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	b = append(b, `,"query_id":`...)
	b = appendString(b, r.QueryID)
	b = append(b, `,"partition_id":`...)
	b = appendString(b, r.PartitionID)
	b = append(b, `,"queueName":`...)
	b = appendString(b, r.QueueName)
	b = append(b, `,"state_ops_applied":`...)
	b = appendInt(b, int64(r.StateOpsApplied))
	b = append(b, `,"push_results":`...)
	b = appendPushResults(b, r.PushResults)
	b = append(b, `,"ack_result":`...)
	if a := r.Ack; a == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"success":`...)
		b = appendBool(b, a.Success)
		b = append(b, `,"count":`...)
		b = appendInt(b, int64(a.Count))
		b = append(b, `,"lease_released":`...)
		b = appendBool(b, a.LeaseReleased)
		b = append(b, `,"dlq":`...)
		b = appendBool(b, a.DLQ)
		b = append(b, '}')
	}
	return append(b, '}')
}

// streamState serves POST /streams/v1/state/get: 200 {success, rows:[{key, value, updated_at}]}
// with value the stored JSON text and updated_at ISO-8601 with milliseconds (spec 0.4); keys
// not in the shard are simply absent (spec 10).
func (s *Server) streamState(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	req, msg := decodeStreamState(body)
	if msg != "" {
		streamsBadRequest(ctx, msg)
		return
	}
	rows, err := s.b.StreamState(req)
	if err != nil {
		s.streamsFail(ctx, err)
		return
	}
	p := getBuf()
	b := append(*p, `{"success":true,"rows":[`...)
	for i := range rows {
		r := &rows[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendString(b, r.Key)
		b = append(b, `,"value":`...)
		b = appendRaw(b, r.Value)
		b = append(b, `,"updated_at":`...)
		b = appendTimeOrNull(b, r.UpdatedAtMicros, 3)
		b = append(b, '}')
	}
	*p = append(b, ']', '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// streamQueryJSON is one entry of GET /api/v1/streams/queries (a comb route; camelCase as the
// other read-side routes).
type streamQueryJSON struct {
	QueryID     wireString `json:"queryId"`
	Name        wireString `json:"name"`
	SourceQueue wireString `json:"sourceQueue"`
	SinkQueue   nullString `json:"sinkQueue"`
	ConfigHash  wireString `json:"configHash"`
	CreatedAt   isoMicros  `json:"createdAt"`
	UpdatedAt   isoMicros  `json:"updatedAt"`
	Shards      int        `json:"shards"`
	Keys        int        `json:"keys"`
	StateBytes  int64      `json:"stateBytes"`
	Cycles      uint64     `json:"cycles"`
}

// streamQueries serves GET /api/v1/streams/queries: {"queries":[...]} in the broker's order.
func (s *Server) streamQueries(ctx *fasthttp.RequestCtx) {
	qs := s.b.StreamQueries()
	out := struct {
		Queries []streamQueryJSON `json:"queries"`
	}{Queries: make([]streamQueryJSON, len(qs))}
	for i, q := range qs {
		out.Queries[i] = streamQueryJSON{
			QueryID: wireString(q.QueryID), Name: wireString(q.Name), SourceQueue: wireString(q.SourceQueue),
			SinkQueue: nullString(q.SinkQueue), ConfigHash: wireString(q.ConfigHash),
			CreatedAt: isoMicros(q.CreatedAtMicros), UpdatedAt: isoMicros(q.UpdatedAtMicros),
			Shards: q.Shards, Keys: q.Keys, StateBytes: q.StateBytes, Cycles: q.Cycles,
		}
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}
