package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
)

// JWT auth at the HTTP edge (spec 9.1, issue 11): dispatch (route.go) checks every request
// against its route's level; the functions here check it earlier, from the header alone, and
// answer refusals.

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
//
// The cap is never above --max-body (a smaller --max-body stays the bound for everyone), and a
// request whose announced body is within it is not checked here at all: the cap would change
// nothing, and dispatch checks its token anyway, so the usual request is verified once, not
// twice (issue 14). Chunked bodies (no length) and longer ones are checked here.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	limit := min(unauthorizedBodyBytes, s.cfg.MaxBodyBytes)
	if n := h.ContentLength(); n >= 0 && n <= limit {
		return fasthttp.RequestConfig{}
	}
	if _, err := s.checkHeader(h); err != nil {
		return fasthttp.RequestConfig{MaxRequestBodySize: limit}
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
	if rt := s.lookup(h.Method(), path, &req); rt != nil {
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
