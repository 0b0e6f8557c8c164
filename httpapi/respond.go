package httpapi

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/replica"
)

// CORS headers of spec 0.1, on every response including errors and the pop 204.
func setCORS(ctx *fasthttp.RequestCtx) {
	h := &ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	h.Set("Access-Control-Max-Age", "86400")
}

// send hands the pooled buffer p to the response without a copy (Response.SwapBody) and puts
// the response's previous buffer back in the pool. p must not be used afterwards.
func send(ctx *fasthttp.RequestCtx, status int, contentType string, p *[]byte) {
	ctx.SetStatusCode(status)
	ctx.Response.Header.SetContentType(contentType)
	old := ctx.Response.SwapBody(*p)
	*p = old
	putBuf(p)
}

func sendJSON(ctx *fasthttp.RequestCtx, status int, p *[]byte) {
	send(ctx, status, "application/json", p)
}

// writeError answers {"error": msg} (spec 0.1).
func writeError(ctx *fasthttp.RequestCtx, status int, msg string) {
	p := getBuf()
	b := append(*p, `{"error":`...)
	b = appendString(b, msg)
	*p = append(b, '}')
	sendJSON(ctx, status, p)
}

// badRequest answers 400 {"error": msg}.
func badRequest(ctx *fasthttp.RequestCtx, msg string) {
	writeError(ctx, fasthttp.StatusBadRequest, msg)
}

// noContent is the pop's "nothing": 204 with no body and no Content-Length (seed 000).
func noContent(ctx *fasthttp.RequestCtx) {
	ctx.Response.ResetBody()
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// fail maps a Backend error to its status (broker/api.go): ErrBadRequest 400 and ErrNotFound 404
// carry the broker's message verbatim; ErrClosed, ErrNotLeader, ErrStale and a replicated commit that failed
// (replica.CommitError: leadership lost mid-request) are 503; a full disk (broker.IsNoSpace:
// ENOSPC, EDQUOT, the commit log out of room) is 507 Insufficient Storage with the reason, which
// Queen's clients retry as any 5xx (issue 21); ErrDamaged is a 500 with the broker's
// short message (it names the partition and says to run `comb fsck`); anything else is a logged
// 500 whose body has every absolute file path cut to its base name (the log keeps the paths).
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case broker.IsNoSpace(err):
		// A full disk is a state, not damage (issue 21): nothing was stored and nothing is
		// out of service; the same request succeeds once space is freed.
		s.log.Warn().Err(err).Str("method", string(ctx.Method())).Str("path", string(ctx.Path())).Msg("request failed: disk full")
		writeError(ctx, fasthttp.StatusInsufficientStorage, noSpaceMessage(err))
	case errors.Is(err, broker.ErrDamaged):
		writeError(ctx, fasthttp.StatusInternalServerError, err.Error())
	case errors.Is(err, broker.ErrBadRequest):
		badRequest(ctx, err.Error())
	case errors.Is(err, broker.ErrNotFound):
		writeError(ctx, fasthttp.StatusNotFound, err.Error())
	case errors.Is(err, broker.ErrClosed):
		writeError(ctx, fasthttp.StatusServiceUnavailable, "Service unavailable: shutting down")
	case errors.Is(err, broker.ErrNotLeader):
		// A follower forwards (forward.go), so this is a node elected but still catching up,
		// or one that lost its term mid-request; Queen's clients retry 5xx.
		unavailable(ctx, "Service unavailable: this node does not lead its cluster")
	case errors.Is(err, broker.ErrStale) || isCommitError(err):
		// A replicated node that lost its leadership while the request waited for its
		// entry: the entry may still commit under the next leader, so the client retries
		// (a push with the same transactionId answers duplicate for what was stored).
		unavailable(ctx, "Service unavailable: this node lost its leadership while answering; retry")
	case errors.Is(err, context.Canceled):
		writeError(ctx, fasthttp.StatusServiceUnavailable, "Service unavailable: shutting down")
	default:
		s.log.Error().Err(err).Str("method", string(ctx.Method())).Str("path", string(ctx.Path())).Msg("request failed")
		writeError(ctx, fasthttp.StatusInternalServerError, redactPaths(err.Error()))
	}
}

// noSpaceMessage is the 507 body's error: the broker's reason (what could not be written, with
// paths cut to base names), starting "no space left on device".
func noSpaceMessage(err error) string {
	msg := redactPaths(err.Error())
	if !strings.HasPrefix(msg, broker.ErrNoSpace.Error()) {
		msg = broker.ErrNoSpace.Error() + ": " + msg
	}
	return msg
}

// absPath matches an absolute file path that starts a word of an error message. Names may hold
// '/' (partitions, groups), but never right after a space, quote or bracket.
var absPath = regexp.MustCompile(`(^|[\s"'(\[=])(/[^\s"',:)\]]+)`)

// redactPaths cuts every absolute path in msg to its base name: clients need not learn the
// server's directory layout.
func redactPaths(msg string) string {
	if !absPath.MatchString(msg) {
		return msg
	}
	return absPath.ReplaceAllStringFunc(msg, func(m string) string {
		i := 0
		for i < len(m) && m[i] != '/' {
			i++
		}
		return m[:i] + filepath.Base(m[i:])
	})
}

// isCommitError reports whether err is a replicated log's refusal or failed wait: leadership
// lost before or while the entry (a push, or a pop's or ack's checkpoint) was committed.
func isCommitError(err error) bool {
	var ce *replica.CommitError
	return errors.As(err, &ce) || errors.Is(err, replica.ErrNotLeader)
}
