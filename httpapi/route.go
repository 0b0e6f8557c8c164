package httpapi

import (
	"github.com/valyala/fasthttp"
)

// maxSegments is more than the longest route (the partition seek has 9).
const maxSegments = 12

// route dispatches on the raw (not yet decoded) path, split on '/', so that a percent-encoded
// "/" inside a name stays inside its segment and is then refused by the name check instead of
// changing the route (spec 0.3: path parameters are percent-decoded; 11 #31). Routes not listed
// here, including the ones clients call but Queen never implemented, are 404 (spec 0.1).
func (s *Server) route(ctx *fasthttp.RequestCtx) {
	method := string(ctx.Method()) // no allocation: compared only
	if method == fasthttp.MethodOptions {
		ctx.SetStatusCode(fasthttp.StatusNoContent) // CORS preflight, spec 0.1
		return
	}
	var arr [maxSegments][]byte
	segs, ok := splitPath(ctx.Request.URI().PathOriginal(), arr[:0])
	if !ok {
		notFound(ctx)
		return
	}
	switch {
	case len(segs) == 1 && string(segs[0]) == "health" && method == fasthttp.MethodGet:
		s.health(ctx)
	case len(segs) == 1 && string(segs[0]) == "metrics" && method == fasthttp.MethodGet:
		s.metricsJSON(ctx)
	case len(segs) == 2 && string(segs[0]) == "metrics" && string(segs[1]) == "prometheus" && method == fasthttp.MethodGet:
		s.metricsPrometheus(ctx)
	case len(segs) >= 3 && string(segs[0]) == "api" && string(segs[1]) == "v1":
		s.routeV1(ctx, method, segs[2:])
	default:
		notFound(ctx)
	}
}

func (s *Server) routeV1(ctx *fasthttp.RequestCtx, method string, segs [][]byte) {
	p := pathParams{ctx: ctx}
	get, post, del := method == fasthttp.MethodGet, method == fasthttp.MethodPost, method == fasthttp.MethodDelete
	switch n, first := len(segs), string(segs[0]); {
	case n == 1 && first == "push" && post:
		s.pushRequests.Add(1)
		s.push(ctx)
	case n == 1 && first == "configure" && post:
		s.configure(ctx)
	case n == 1 && first == "pop" && get:
		s.popRequests.Add(1)
		s.popDiscovery(ctx)
	case n == 3 && first == "pop" && string(segs[1]) == "queue" && get:
		s.popRequests.Add(1)
		if q, ok := p.decode(segs[2]); ok {
			s.popQueue(ctx, q, "", false)
		}
	case n == 5 && first == "pop" && string(segs[1]) == "queue" && string(segs[3]) == "partition" && get:
		s.popRequests.Add(1)
		q, ok1 := p.decode(segs[2])
		part, ok2 := p.decode(segs[4])
		if ok1 && ok2 {
			s.popQueue(ctx, q, part, true)
		}
	case n == 1 && first == "ack" && post:
		s.ackRequests.Add(1)
		s.ackOne(ctx)
	case n == 2 && first == "ack" && string(segs[1]) == "batch" && post:
		s.ackRequests.Add(1)
		s.ackBatch(ctx)
	case n == 1 && first == "transaction" && post:
		s.transaction(ctx)
	case n == 3 && first == "lease" && string(segs[2]) == "extend" && post:
		if id, ok := p.decode(segs[1]); ok {
			s.extendLease(ctx, id)
		}
	case n == 1 && first == "consumer-groups" && get:
		s.listGroups(ctx)
	case n == 2 && first == "consumer-groups" && get:
		// The literal route wins over /:group (spec route table): a group named "lagging" has no
		// detail route.
		if string(segs[1]) == "lagging" {
			s.laggingGroups(ctx)
		} else if g, ok := p.decode(segs[1]); ok {
			s.groupDetail(ctx, g)
		}
	case n == 3 && first == "consumer-groups" && string(segs[2]) == "subscription" && post:
		if g, ok := p.decode(segs[1]); ok {
			s.setSubscription(ctx, g)
		}
	case n == 2 && first == "stats" && string(segs[1]) == "refresh" && post:
		s.statsRefresh(ctx)
	case n == 2 && first == "consumer-groups" && del:
		if g, ok := p.decode(segs[1]); ok {
			s.deleteGroup(ctx, g, "")
		}
	case n >= 4 && first == "consumer-groups" && string(segs[2]) == "queues":
		s.routeGroupQueue(ctx, p, get, post, del, segs)
	case n == 3 && first == "resources" && string(segs[1]) == "queues" && del:
		if q, ok := p.decode(segs[2]); ok {
			s.deleteQueue(ctx, q)
		}
	case first == "system" && n >= 2 && string(segs[1]) == "maintenance" && (get || post):
		s.routeMaintenance(ctx, post, segs)
	case first == "resources" && get:
		s.routeResources(ctx, p, segs)
	case n == 1 && first == "dlq" && get:
		s.dlq(ctx)
	default:
		notFound(ctx)
	}
}

// routeGroupQueue serves /api/v1/consumer-groups/:group/queues/:queue[...] (spec 7.1, 7.2, 7.4).
func (s *Server) routeGroupQueue(ctx *fasthttp.RequestCtx, p pathParams, get, post, del bool, segs [][]byte) {
	n := len(segs)
	switch {
	case n == 4 && del:
	case n == 5 && string(segs[4]) == "seek" && post:
	case n == 7 && string(segs[4]) == "partitions" && string(segs[6]) == "seek" && post:
	default:
		notFound(ctx)
		return
	}
	g, ok1 := p.decode(segs[1])
	q, ok2 := p.decode(segs[3])
	if !ok1 || !ok2 {
		return
	}
	switch n {
	case 4:
		s.deleteGroup(ctx, g, q)
	case 5:
		s.seek(ctx, g, q)
	default:
		if part, ok := p.decode(segs[5]); ok {
			s.seekPartition(ctx, g, q, part)
		}
	}
}

// splitPath splits "/a/b/c" into [a b c] without copying. ok is false for paths that cannot be
// a route (no leading '/', too many segments).
func splitPath(path []byte, dst [][]byte) ([][]byte, bool) {
	if len(path) == 0 || path[0] != '/' {
		return dst, false
	}
	path = path[1:]
	for {
		if len(dst) == maxSegments {
			return dst, false
		}
		i := indexByte(path, '/')
		if i < 0 {
			return append(dst, path), true
		}
		dst = append(dst, path[:i])
		path = path[i+1:]
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// pathParams percent-decodes path parameters, answering 400 itself for a malformed escape.
type pathParams struct{ ctx *fasthttp.RequestCtx }

func (p pathParams) decode(seg []byte) (string, bool) {
	v, ok := percentDecode(seg)
	if !ok {
		badRequest(p.ctx, "Invalid percent-encoding in path")
	}
	return v, ok
}

// percentDecode decodes %XX escapes (RFC 3986). '+' stays '+': it only means space in query
// strings. ok is false for a '%' not followed by two hex digits.
func percentDecode(seg []byte) (string, bool) {
	if indexByte(seg, '%') < 0 {
		return string(seg), true
	}
	out := make([]byte, 0, len(seg))
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		hi, ok1 := unhex(seg[i+1])
		lo, ok2 := unhex(seg[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func notFound(ctx *fasthttp.RequestCtx) {
	writeError(ctx, fasthttp.StatusNotFound, "Not Found")
}
