package httpapi

import (
	"sync"

	json "github.com/goccy/go-json"

	"github.com/combmq/comb/broker"
)

// pushScratch holds one push request's buffers between requests: the decoded items
// (goccy decodes an array into the capacity a slice already has), the broker.PushItem
// slice handed to Broker.Push and the results it writes. Without it a 100-item push grew the first from nothing
// (reflect.growslice, ~22 KB a request) and made the second (~10 KB) every time
// (docs/benchmarks.md, "Per-request allocations"). Nothing in them outlives the request:
// Broker.Push copies what it stores into the segment and the commit log before it returns,
// and release zeroes every slice, so a pooled scratch pins no payload.
type pushScratch struct {
	req     pushBody
	items   []broker.PushItem
	results []broker.PushResult // lent to Backend.PushInto (~12 KB for 100 items)
}

// maxPooledItems keeps one huge push (64 MiB of tiny items) from pinning its slices.
const maxPooledItems = 4096

var pushScratchPool = sync.Pool{New: func() any { return new(pushScratch) }}

func getPushScratch() *pushScratch { return pushScratchPool.Get().(*pushScratch) }

// release zeroes the scratch and pools it; the items decode returned are invalid after.
func (sc *pushScratch) release() {
	if cap(sc.req.Items) > maxPooledItems || cap(sc.items) > maxPooledItems || cap(sc.results) > maxPooledItems {
		return
	}
	clear(sc.req.Items[:cap(sc.req.Items)])
	clear(sc.items[:cap(sc.items)])
	clear(sc.results[:cap(sc.results)])
	sc.req.Items, sc.items, sc.results = sc.req.Items[:0], sc.items[:0], sc.results[:0]
	pushScratchPool.Put(sc)
}

// decode is decodePush into the scratch's buffers: the same items and the same 400 messages.
// A body whose items decode to none is decoded again into a fresh pushBody, because an absent
// "items" leaves the pooled (non-nil) slice as `"items": []` does, and only the first is a 400.
func (sc *pushScratch) decode(body []byte) ([]broker.PushItem, string) {
	req := &sc.req
	if req.Items == nil {
		req.Items = make([]pushItemJSON, 0, 128)
	}
	req.Items = req.Items[:0]
	if err := json.UnmarshalOf(body, req); err != nil {
		return nil, decodeError(err, pushTypeMessage)
	}
	if len(req.Items) == 0 {
		sc.req.Items = sc.req.Items[:0:0] // the pooled array may hold a partial decode: not reused
		return decodePush(body)
	}
	items, msg := toPushItemsInto(sc.items[:0], req.Items, "items")
	if cap(items) > cap(sc.items) {
		sc.items = items
	}
	if msg == "" {
		msg = checkItemsNotReplaced(items, body)
	}
	if msg != "" {
		return nil, msg
	}
	return items, ""
}
