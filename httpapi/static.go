package httpapi

import (
	"github.com/valyala/fasthttp"
)

// Static serves the dashboard's files (package ui: the embedded dashboard, or `--ui-dir`).
// Config.Static nil leaves `/` a 404.
type Static interface {
	// Claims reports whether a request no API route matched is the dashboard's (spec 8.10: a GET
	// of anything but /api*, /health*, /metrics* and /streams/v1*); method and rawPath are as
	// received.
	Claims(method, rawPath []byte) bool
	// Serve answers a claimed request.
	Serve(ctx *fasthttp.RequestCtx)
}

// staticRoute is the route of a request the dashboard claims. It is public: the files hold no
// data, and the page must load before the user has entered a token (spec 9.1, where the default
// JWT_SKIP_PATHS opens `/` but, matching exactly, not `/assets/app.js`); the API routes the page
// calls check the token as usual.
var staticRoute = route{"GET", "", pub, func(s *Server, r *request) { s.cfg.Static.Serve(r.ctx) }}

// lookup is the route of (method, raw path): a row of the table, else the dashboard's when it
// claims the request, else nil. API routes always win, so no file can shadow one.
func (s *Server) lookup(method, path []byte, req *request) *route {
	if rt := table.match(method, path, req); rt != nil {
		return rt
	}
	if s.cfg.Static != nil && s.cfg.Static.Claims(method, path) {
		return &staticRoute
	}
	return nil
}
