package httpapi

import (
	"github.com/valyala/fasthttp"
)

// maxSegments is more than the longest route (the partition seek has 9).
const maxSegments = 12

// dispatch finds the request's route in the table (routes.go) or the dashboard's (static.go), checks its token against the
// route's level when JWT auth is on (spec 9.1), and runs the handler with the token's `sub`, or,
// on a follower of a replicated cluster, forwards the request to the leader (forward.go).
// Routes not in the table, including the ones clients call but Queen never implemented, are
// 404 (spec 0.1) once the caller passes the level of unlisted routes (read-write).
func (s *Server) dispatch(ctx *fasthttp.RequestCtx) {
	req := request{ctx: ctx}
	path := ctx.Request.URI().PathOriginal()
	rt := s.lookup(ctx.Method(), path, &req)
	level := unlistedLevel
	if rt != nil {
		level = rt.level
	}
	if s.auth.Enabled() {
		id, err := s.auth.Check(path, ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), level)
		if err != nil {
			s.refuse(ctx, err)
			return
		}
		req.sub = id.Subject
	}
	if rt == nil {
		notFound(ctx)
		return
	}
	if s.fwd != nil && !rt.nodeLocal() && s.forward(ctx, rt) {
		return // a follower: the leader answered, or a 503 said why it could not
	}
	rt.serve(s, &req)
	if s.reads != nil && rt.isRead() {
		s.confirmRead(ctx) // a cluster node answers reads from committed state (read_barrier.go)
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
