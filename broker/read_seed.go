package broker

import (
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// partView is what cursor seeding sees of a partition: only the visible
// (durable) messages.
type partView struct{ p *partition }

func (v partView) FirstOffset() uint64 { return min(v.p.log.FirstOffset(), v.p.visible.Load()) }

func (v partView) NextOffset() uint64 { return v.p.visible.Load() }

func (v partView) OffsetAtOrAfterTime(ts int64) uint64 {
	return min(v.p.log.OffsetAtOrAfterTime(ts), v.p.visible.Load())
}

// seedCursorLocked is the committed offset of a (partition, group) the group
// has never touched (seed 000 "Subscription modes are decided once"): queue
// mode from the oldest retained offset; a named group from its stored
// subscription as a partition born after it subscribed; a targeted pop with no
// stored record from its own request's intent. The caller holds p.mu.
func (b *Broker) seedCursorLocked(pc *popCtx, p *partition) uint64 {
	if pc.queueMode {
		return cursor.StartCursor(cursor.Subscription{Mode: cursor.SubAll}, partView{p}, true)
	}
	if sub, ok := b.cur.Subscription(p.q.name, pc.group); ok {
		return cursor.StartCursor(sub, partView{p}, false)
	}
	return cursor.StartCursor(pc.sub, partView{p}, true)
}

// groupReadyFor returns the ready structure of (q, group), creating it on the
// group's first wildcard or discovery contact since Open. A named group with
// no stored subscription gets one now, even if this pop finds nothing, and a
// cursor on every existing partition (seed 000; spec 3.8).
func (b *Broker) groupReadyFor(pc *popCtx, q *queue) (*groupReady, error) {
	q.mu.RLock()
	g := q.groups[pc.group]
	q.mu.RUnlock()
	if g != nil {
		return g, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if g = q.groups[pc.group]; g != nil {
		return g, nil
	}
	g = newGroupReady()
	parts := q.list
	if !pc.queueMode {
		if _, ok := b.cur.Subscription(q.name, pc.group); !ok {
			b.cur.SetSubscription(q.name, pc.group, pc.sub)
			pc.dirty = true
			for _, p := range parts {
				if p.isDamaged() {
					continue // seeded from the record once it is back in service
				}
				k := cursor.Key{Partition: p.id, Group: pc.group}
				p.mu.Lock()
				if _, ok := b.cur.Get(k); !ok {
					b.cur.Set(k, lease.State{Committed: cursor.StartCursor(pc.sub, partView{p}, true)})
					b.cursorChanged(p, pc.group)
				}
				p.mu.Unlock()
			}
		}
	}
	b.scanReady(g, parts, pc.group, pc.nowMicros)
	q.groups[pc.group] = g
	return g, nil
}

// scanReady adds to g every partition of parts with work for group: the one
// scan a group's ready structure is built from (at its first contact, or at
// Open for the groups the cursors name; see buildReadyAtOpen).
func (b *Broker) scanReady(g *groupReady, parts []*partition, group string, nowMicros int64) {
	for _, p := range parts {
		if p.isDamaged() {
			continue
		}
		st, ok := b.cur.Get(cursor.Key{Partition: p.id, Group: group})
		vis := p.claimableEnd()
		switch {
		case !ok:
			if vis > p.log.FirstOffset() {
				g.Add(p, p.createdAt)
			}
		case st.Lease.Live(nowMicros):
			g.Defer(p, p.createdAt, st.Lease.ExpiresAtMicros)
		case st.Committed+1 < vis:
			g.Add(p, p.createdAt)
		}
	}
}

// subscribeMissingQueue records a named group's first contact with a queue
// that does not exist yet, so that its partitions, all born later, start from
// the stored subscription (spec 3.8, 11 #9).
func (b *Broker) subscribeMissingQueue(pc *popCtx, name string) error {
	if pc.queueMode {
		return nil
	}
	if _, ok := b.cur.Subscription(name, pc.group); !ok {
		b.cur.SetSubscription(name, pc.group, pc.sub)
		pc.dirty = true
	}
	return nil
}

// buildReadyAtOpen builds, at Open, the ready structure of every (queue,
// group) the broker can already name: the queue-mode group and the named
// groups with a subscription record, when they have a cursor on the queue.
// The first pop after a restart then finds its candidates without scanning
// the queue's partitions (issue 7). Groups known only from targeted pops are
// left to their first wildcard pop, which also records their subscription.
func (b *Broker) buildReadyAtOpen() {
	now := b.now().UnixMicro()
	b.mu.RLock()
	qs := make([]*queue, 0, len(b.queues))
	for _, q := range b.queues {
		qs = append(qs, q)
	}
	b.mu.RUnlock()
	for _, q := range qs {
		q.mu.Lock()
		for group := range q.groupList() {
			if q.groups[group] != nil {
				continue
			}
			if group != QueueModeGroup {
				if _, ok := b.cur.Subscription(q.name, group); !ok {
					continue
				}
			}
			g := newGroupReady()
			b.scanReady(g, q.list, group, now)
			q.groups[group] = g
		}
		q.mu.Unlock()
	}
}
