package httpapi

import (
	"sync"

	"github.com/combmq/comb/broker"
)

// ackScratch holds one ack/batch request's slices between requests: the parsed items and the
// results Backend.AckInto writes (a batch of 100 made ~8 KB of each per request; issue 23:
// no per-request allocation on the hot paths). Nothing in them outlives the request: the
// broker keeps neither slice, the response is encoded before release, and release zeroes both,
// so a pooled scratch pins no request string.
type ackScratch struct {
	items   []broker.AckItem
	results []broker.AckResult
}

var ackScratchPool = sync.Pool{New: func() any { return new(ackScratch) }}

// maxPooledAcks keeps one huge ack batch from pinning its slices.
const maxPooledAcks = 4096

func getAckScratch() *ackScratch { return ackScratchPool.Get().(*ackScratch) }

// release zeroes the scratch and pools it; the items and results it lent are invalid after.
func (sc *ackScratch) release() {
	if cap(sc.items) > maxPooledAcks || cap(sc.results) > maxPooledAcks {
		return
	}
	clear(sc.items[:cap(sc.items)])
	clear(sc.results[:cap(sc.results)])
	sc.items, sc.results = sc.items[:0], sc.results[:0]
	ackScratchPool.Put(sc)
}
