package broker

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/combmq/comb/segment"
)

// popHold is what a pop result's Release gives back: the read buffers its
// payloads alias, its Messages slice and the text of its message ids. One is
// taken per pop pass and pooled again on Release (or at once when the pass
// claims nothing), so a pop of 100 allocates none of them: the release closure,
// the buffer list, the ids' string and the Messages (issue 23: no per-request
// allocation on the hot paths).
//
// A PopResult may be copied, and every copy may be released: gen tells the
// current user from a copy of a result already released. Release advances gen
// with a compare-and-swap from the value the result was handed out with, so
// only the first release of a hand-out recycles the hold, and a stale copy's
// release does nothing even after the hold went to another pop.
type popHold struct {
	gen  atomic.Uint64
	bufs []*segment.ReadBuffer
	msgs []Message
	ids  []byte // the message ids' text; Message.ID strings view it
}

var popHolds = sync.Pool{New: func() any { return new(popHold) }}

// maxPooledMessages is the capacity a pop's Messages start with at most, and
// the largest one a pooled hold keeps.
const maxPooledMessages = 1024

// getPopHold is an empty hold and the generation its result is handed out with.
func getPopHold() (*popHold, uint64) {
	h := popHolds.Get().(*popHold)
	return h, h.gen.Load()
}

// messages is an empty Messages slice with room for n (at most
// maxPooledMessages are asked for).
func (h *popHold) messages(n int) []Message {
	if cap(h.msgs) < n {
		h.msgs = make([]Message, 0, n)
	}
	return h.msgs[:0]
}

// appendIDs writes the canonical text of the ids of msgs (non-empty) in h and
// returns it as one string: each message's id is a 36-byte slice of it, valid
// until the result is released. Earlier strings stay
// valid when the buffer grows (the old array is never written again).
func (h *popHold) appendIDs(msgs []segment.Message) string {
	if cap(h.ids)-len(h.ids) < 36*len(msgs) {
		h.ids = make([]byte, 0, max(2*cap(h.ids), 36*len(msgs)))
	}
	start := len(h.ids)
	for i := range msgs {
		h.ids = appendUUID(h.ids, msgs[i].ID)
	}
	return unsafe.String(&h.ids[start], len(h.ids)-start)
}

// release recycles h if gen is still the generation of this hand-out; ms is
// the result's Messages (grown past h.msgs, perhaps).
func (h *popHold) release(gen uint64, ms []Message) {
	if !h.gen.CompareAndSwap(gen, gen+1) {
		return // released already, through a copy of the result
	}
	for _, rb := range h.bufs {
		rb.Reset()
		readBufPool.Put(rb)
	}
	clear(h.bufs)
	h.bufs = h.bufs[:0]
	clear(ms) // no payload or string stays reachable from the pool
	if ms != nil && cap(ms) != cap(h.msgs) {
		// Grown past the hold's slice by append: the old array holds the first messages.
		clear(h.msgs[:cap(h.msgs)])
		h.msgs = nil
		if cap(ms) <= maxPooledMessages {
			h.msgs = ms
		}
	}
	h.msgs = h.msgs[:0]
	h.ids = h.ids[:0]
	if cap(h.ids) > 36*maxPooledMessages {
		h.ids = nil
	}
	popHolds.Put(h)
}
