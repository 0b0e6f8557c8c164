package httpapi

import (
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/combmq/comb/broker"
)

// maintenance serves GET/POST /api/v1/system/maintenance and, with pop, .../maintenance/pop
// (spec 8.8).
func (s *Server) maintenance(ctx *fasthttp.RequestCtx, post, pop bool) {
	st := s.b.Maintenance()
	if post {
		on, ok := decodeEnabled(ctx)
		if !ok {
			return
		}
		var err error
		if pop {
			st, err = s.b.SetPopMaintenance(on)
		} else {
			st, err = s.b.SetPushMaintenance(on)
		}
		if err != nil {
			s.fail(ctx, err)
			return
		}
	}
	p := getBuf()
	b := *p
	switch {
	case pop:
		b = append(b, `{"popMaintenanceMode":`...)
		b = appendBool(b, st.PopMaintenance)
		b = append(b, `,"message":`...)
		if st.PopMaintenance {
			b = appendString(b, "Pop maintenance mode is on: every pop answers 204 with no messages")
		} else {
			b = appendString(b, "Pop maintenance mode is off")
		}
	case post:
		b = append(b, `{"maintenanceMode":`...)
		b = appendBool(b, st.PushMaintenance)
		b = appendBufferFields(b, st)
		b = append(b, `,"message":`...)
		if st.PushMaintenance {
			b = appendString(b, "Maintenance mode is on: pushes are stored and become visible when it is switched off")
		} else {
			b = appendString(b, "Maintenance mode is off: buffered messages are visible")
		}
	default:
		b = append(b, `{"maintenanceMode":`...)
		b = appendBool(b, st.PushMaintenance)
		b = append(b, `,"popMaintenanceMode":`...)
		b = appendBool(b, st.PopMaintenance)
		b = appendBufferFields(b, st)
		b = append(b, `,"bufferStats":{"heldPartitions":`...)
		b = appendInt(b, int64(st.HeldPartitions))
		b = append(b, '}')
	}
	*p = append(b, '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendBufferFields writes bufferedMessages and bufferHealthy: comb's "buffer" is the held
// part of each partition's log, as durable as any message, so it is always healthy.
func appendBufferFields(b []byte, st broker.MaintenanceStatus) []byte {
	b = append(b, `,"bufferedMessages":`...)
	b = appendInt(b, st.BufferedMessages)
	return append(b, `,"bufferHealthy":true`...)
}

// decodeEnabled reads {"enabled":bool}, answering 400 itself when it is missing or not a
// boolean (spec 8.8) and for an empty or unparsable body (spec 0.1).
func decodeEnabled(ctx *fasthttp.RequestCtx) (on, ok bool) {
	body := ctx.PostBody()
	if len(body) == 0 {
		badRequest(ctx, "Empty request body")
		return false, false
	}
	parser, v, ok := parseJSON(ctx, b2s(body))
	if !ok {
		return false, false
	}
	defer parserPool.Put(parser)
	e := v.Get("enabled")
	if e == nil || (e.Type() != fastjson.TypeTrue && e.Type() != fastjson.TypeFalse) {
		badRequest(ctx, "enabled (boolean) is required")
		return false, false
	}
	return e.Type() == fastjson.TypeTrue, true
}
