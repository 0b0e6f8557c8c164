package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
)

// maxSegments is more than the longest route (the partition seek has 9).
const maxSegments = 12

// dispatch finds the request's route in the table (routes.go), checks its token against the
// route's level when JWT auth is on (spec 9.1), and runs the handler with the token's `sub`.
// Routes not in the table, including the ones clients call but Queen never implemented, are
// 404 (spec 0.1) once the caller passes the level of unlisted routes (read-write).
func (s *Server) dispatch(ctx *fasthttp.RequestCtx) {
	req := request{ctx: ctx}
	path := ctx.Request.URI().PathOriginal()
	rt := table.match(ctx.Method(), path, &req)
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
	rt.serve(s, &req)
}

// unauthorizedBodyBytes caps the body of a request that auth will refuse (headerReceived). A
// request with a bad token and a body under it is read and answered its 401/403 as usual; one
// over it is answered at once and closed, and a client that is still sending may see the
// connection reset instead of the answer (it retries, then reports the error). 1 MiB keeps
// ordinary refused requests readable while bounding what unauthenticated connections buffer
// (--max-conns × 1 MiB instead of × --max-body).
const unauthorizedBodyBytes = 1 << 20

// headerReceived runs once a request's header is read, before its body: a request whose token
// does not pass its route's level may send at most unauthorizedBodyBytes of body, instead of
// --max-body (64 MiB), so unauthenticated clients cannot make the server read and buffer large
// bodies it will refuse anyway. The refusal itself is answered by dispatch, or by errorHandler
// when the body was over the cap (with the same 401/403, not a 413).
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if _, err := s.checkHeader(h); err != nil {
		return fasthttp.RequestConfig{MaxRequestBodySize: unauthorizedBodyBytes}
	}
	return fasthttp.RequestConfig{}
}

// checkHeader is dispatch's auth check from the header alone (the URI is not parsed yet).
func (s *Server) checkHeader(h *fasthttp.RequestHeader) (auth.Identity, *auth.Error) {
	if !s.auth.Enabled() {
		return auth.Identity{}, nil
	}
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if err := u.Parse(nil, h.RequestURI()); err != nil {
		return auth.Identity{}, nil // fasthttp answers the malformed URI itself
	}
	var req request
	path := u.PathOriginal()
	level := unlistedLevel
	if rt := table.match(h.Method(), path, &req); rt != nil {
		level = rt.level
	}
	return s.auth.Check(path, h.Peek(fasthttp.HeaderAuthorization), level)
}

// refuse answers a request auth turned down with Queen's body (spec 9.1) and counts it.
func (s *Server) refuse(ctx *fasthttp.RequestCtx, err *auth.Error) {
	switch err.Status {
	case fasthttp.StatusUnauthorized:
		s.authRefused401.Add(1)
		// RFC 6750 3: a 401 names the scheme it wants.
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, "Bearer")
	case fasthttp.StatusForbidden:
		s.authRefused403.Add(1)
	default:
		s.authErrors.Add(1)
		s.log.Warn().Str("path", string(ctx.Path())).Str("error", err.Message).Msg("authentication could not run")
	}
	writeError(ctx, err.Status, err.Message)
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
