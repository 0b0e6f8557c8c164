package broker

import (
	"container/heap"
	"sync"

	"github.com/combmq/comb/cursor"
)

// groupReady is the candidate structure of one (queue, consumer group): the
// partitions that probably have work for the group, so that a wildcard or
// discovery pop finds the oldest ready partition without scanning every
// partition (seed 004: "gives out the oldest ready partition first").
//
// An entry is in one of three places:
//   - ready: probably has messages past the group's cursor and no live lease;
//     ordered by readyKey, the µs timestamp of its oldest unconsumed segment
//     as far as the broker knows (approximate on purpose, seed 000);
//   - deferred: not before `until` (a live lease's expiry, a delayedProcessing
//     or windowBuffer hold); promoted to ready when that time passes;
//   - in flight: taken by a pop that is claiming it.
//
// Partitions with nothing pending have no entry. Everything is re-verified
// under the partition lock at claim time, so a stale entry only costs one
// wasted look. Each touch bumps the entry's seq; a pop finishing an entry it
// took applies its verdict only if nothing touched the entry meanwhile, so a
// push that lands during a claim is never lost.
type groupReady struct {
	mu       sync.Mutex
	entries  map[*partition]*readyEntry
	ready    entryHeap
	deferred entryHeap
	seq      uint64
}

const (
	inFlight uint8 = iota
	inReady
	inDeferred
)

type readyEntry struct {
	p        *partition
	readyKey int64 // µs
	until    int64 // µs, deferred only
	where    uint8
	idx      int
	seq      uint64
}

type entryHeap struct {
	items    []*readyEntry
	byExpiry bool
}

func (h *entryHeap) Len() int { return len(h.items) }
func (h *entryHeap) Less(i, j int) bool {
	if h.byExpiry {
		return h.items[i].until < h.items[j].until
	}
	return h.items[i].readyKey < h.items[j].readyKey
}
func (h *entryHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].idx = i
	h.items[j].idx = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*readyEntry)
	e.idx = len(h.items)
	h.items = append(h.items, e)
}
func (h *entryHeap) Pop() any {
	n := len(h.items) - 1
	e := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	e.idx = -1
	return e
}

func newGroupReady() *groupReady {
	return &groupReady{entries: make(map[*partition]*readyEntry), deferred: entryHeap{byExpiry: true}}
}

func (g *groupReady) unlinkLocked(e *readyEntry) {
	switch e.where {
	case inReady:
		heap.Remove(&g.ready, e.idx)
	case inDeferred:
		heap.Remove(&g.deferred, e.idx)
	}
	e.where = inFlight
}

// touch says p probably has work now (a push landed, a lease was released, a
// seek moved the cursor back). key is the µs timestamp of the work.
func (g *groupReady) touch(p *partition, key int64) {
	g.mu.Lock()
	g.touchLocked(p, key)
	g.mu.Unlock()
}

func (g *groupReady) touchLocked(p *partition, key int64) {
	g.seq++
	e := g.entries[p]
	if e == nil {
		e = &readyEntry{p: p, readyKey: key}
		g.entries[p] = e
	} else if e.where == inReady {
		e.seq = g.seq
		if key < e.readyKey {
			e.readyKey = key
			heap.Fix(&g.ready, e.idx)
		}
		return
	} else {
		g.unlinkLocked(e)
		if e.readyKey == 0 || key < e.readyKey {
			e.readyKey = key
		}
	}
	e.seq = g.seq
	e.where = inReady
	heap.Push(&g.ready, e)
}

// pushed is touch for a push: a partition already deferred (leased) stays
// deferred, because the new messages wait behind the lease anyway.
func (g *groupReady) pushed(p *partition, key int64) {
	g.mu.Lock()
	if e := g.entries[p]; e != nil && e.where != inFlight {
		g.mu.Unlock()
		return
	}
	g.touchLocked(p, key)
	g.mu.Unlock()
}

// take removes and returns the oldest ready partition after promoting every
// deferred entry due at nowMicros, excluding skip. ok=false when none is ready.
func (g *groupReady) take(nowMicros int64, skip map[*partition]bool) (p *partition, seq uint64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.deferred.Len() > 0 && g.deferred.items[0].until <= nowMicros {
		e := heap.Pop(&g.deferred).(*readyEntry)
		e.where = inReady
		heap.Push(&g.ready, e)
	}
	var put []*readyEntry
	defer func() {
		for _, e := range put {
			heap.Push(&g.ready, e)
		}
	}()
	for g.ready.Len() > 0 {
		e := heap.Pop(&g.ready).(*readyEntry)
		if skip[e.p] {
			put = append(put, e)
			continue
		}
		e.where = inFlight
		return e.p, e.seq, true
	}
	return nil, 0, false
}

// peekKey returns the readyKey of the oldest ready entry.
func (g *groupReady) peekKey(nowMicros int64) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ready.Len() > 0 {
		return g.ready.items[0].readyKey, true
	}
	if g.deferred.Len() > 0 && g.deferred.items[0].until <= nowMicros {
		return g.deferred.items[0].readyKey, true
	}
	return 0, false
}

// nextDeferred returns the earliest `until` (µs) of the deferred entries: when
// the next held-back partition becomes a candidate. 0 when none is deferred.
func (g *groupReady) nextDeferred() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deferred.Len() == 0 {
		return 0
	}
	return g.deferred.items[0].until
}

// Verdicts of a pop on an entry it took.
const (
	verdictDone  = iota // nothing pending for the group: drop the entry
	verdictLater        // deferred until `until`
	verdictAgain        // still has work: back to ready with readyKey key
)

// finish applies a pop's verdict on an entry it took with take.
func (g *groupReady) finish(p *partition, seq uint64, verdict int, key, until int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entries[p]
	if e == nil {
		if verdict == verdictDone {
			return
		}
		e = &readyEntry{p: p}
		g.entries[p] = e
	} else if e.where != inFlight || e.seq != seq {
		return // touched meanwhile: the touch's verdict stands
	}
	switch verdict {
	case verdictDone:
		delete(g.entries, p)
	case verdictLater:
		if key != 0 {
			e.readyKey = key
		}
		e.until = until
		e.where = inDeferred
		heap.Push(&g.deferred, e)
	default:
		e.readyKey = key
		e.where = inReady
		heap.Push(&g.ready, e)
	}
}

// deferLocked puts p (whatever its state) in deferred until `until`; used by
// the initial scan.
func (g *groupReady) deferLocked(p *partition, key, until int64) {
	e := &readyEntry{p: p, readyKey: key, until: until, where: inDeferred}
	g.entries[p] = e
	heap.Push(&g.deferred, e)
}

// released says the group's lease on p went away with nothing left to claim:
// an entry deferred until that lease's expiry is dropped, so that the next
// push makes p a candidate at once instead of after the old expiry.
func (g *groupReady) released(p *partition) {
	g.mu.Lock()
	if e := g.entries[p]; e != nil && e.where == inDeferred {
		g.unlinkLocked(e)
		delete(g.entries, p)
	}
	g.mu.Unlock()
}

// peekPartition returns the oldest ready partition without taking it.
func (g *groupReady) peekPartition() *partition {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ready.Len() == 0 {
		return nil
	}
	return g.ready.items[0].p
}

// leaseReleased updates (p's queue, group)'s ready structure after the group's
// lease on p went away: p is a candidate again when messages are pending past
// the cursor; otherwise its entry, deferred until the old lease's expiry, is
// dropped so that the next push re-arms it (a push leaves deferred entries
// alone because it cannot tell a live lease from a released one).
func (b *Broker) leaseReleased(p *partition, group string, now int64) {
	st, _ := b.cur.Get(cursor.Key{Partition: p.id, Group: group})
	if st.Committed+1 < p.visible.Load() {
		b.touchGroup(p, group, now)
		return
	}
	p.q.mu.RLock()
	g := p.q.groups[group]
	p.q.mu.RUnlock()
	if g != nil {
		g.released(p)
	}
}

// touchGroup tells (p's queue, group)'s ready structure that p has work again.
func (b *Broker) touchGroup(p *partition, group string, key int64) {
	p.q.mu.RLock()
	g := p.q.groups[group]
	p.q.mu.RUnlock()
	if g != nil {
		g.touch(p, key)
	}
}
