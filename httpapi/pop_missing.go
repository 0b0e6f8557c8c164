package httpapi

import "github.com/valyala/fasthttp"

// A pop naming a queue that does not exist answers 204, as Queen does: Queen's JS consumer
// (ConsumerManager) rethrows any 4xx and stops, and a consumer commonly starts before its
// producer's first push creates the queue, so a 404 would break it. A long-poll parks as well,
// and the first push to the new queue wakes it. What was missing is any sign of a typo in the
// queue name (issue 25): the 204 now carries this header, and the server logs the name at
// debug.

// HeaderQueueMissing is set on a pop's 204 when the queue it names does not exist.
const HeaderQueueMissing = "X-Comb-Queue-Missing"

// queueMissingNote is its value.
const queueMissingNote = "no queue of this name exists: a push or configure creates it; check the name"

// noteMissingQueue adds the header to an empty pop's answer when queue is named and missing.
func (s *Server) noteMissingQueue(ctx *fasthttp.RequestCtx, queue string) {
	if queue == "" || s.b.QueueExists(queue) {
		return
	}
	ctx.Response.Header.Set(HeaderQueueMissing, queueMissingNote)
	s.log.Debug().Str("queue", queue).Msg("pop on a queue that does not exist: answered 204")
}
