package broker

import (
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// refreshPending recomputes p's pending depth for the __QUEUE_MODE__ group
// (messages after its cursor, or after the live low-water mark when it has
// none: expired messages are not pending, read_expire.go)
// and adds the change to the queue's counter, so a maxSize check (spec 1.7)
// reads one atomic instead of scanning partitions. Called after anything that
// moves the visible end, the low-water mark or the queue-mode cursor. May be
// called with p.mu held (pendMu is a leaf lock).
func (b *Broker) refreshPending(p *partition) {
	p.pendMu.Lock()
	from := p.liveFrom()
	if st, ok := b.cur.Get(cursor.Key{Partition: p.id, Group: QueueModeGroup}); ok {
		from = max(from, st.Committed+1)
	}
	var n int64
	if vis := p.visible.Load(); vis > from {
		n = int64(vis - from)
	}
	d := n - p.qmPending
	p.qmPending = n
	p.pendMu.Unlock()
	if d != 0 {
		p.q.pendingQM.Add(d)
	}
}

// cursorChanged is called after a (p, group) cursor was set or deleted: it
// records the group name for retention and keeps the maxSize counter current.
func (b *Broker) cursorChanged(p *partition, group string) {
	p.q.noteGroup(group)
	if group == QueueModeGroup {
		b.refreshPending(p)
	}
}

// noteGroup adds group to the queue's group names (copy on write: groups
// are few and added rarely, looked up on every cursor change).
func (q *queue) noteGroup(group string) {
	if m := q.groupNames.Load(); m != nil {
		if _, ok := (*m)[group]; ok {
			return
		}
	}
	q.namesMu.Lock()
	defer q.namesMu.Unlock()
	old := q.groupNames.Load()
	if old != nil {
		if _, ok := (*old)[group]; ok {
			return
		}
	}
	m := make(map[string]struct{}, 1)
	if old != nil {
		for g := range *old {
			m[g] = struct{}{}
		}
	}
	m[group] = struct{}{}
	q.groupNames.Store(&m)
}

// groups returns the queue's group names (do not modify).
func (q *queue) groupList() map[string]struct{} {
	if m := q.groupNames.Load(); m != nil {
		return *m
	}
	return nil
}

// initCounters fills the group names and pending counters from the
// recovered cursors: one pass over the cursors and one over the partitions,
// at Open.
func (b *Broker) initCounters() {
	b.mu.RLock()
	defer b.mu.RUnlock()
	b.cur.Range(func(k cursor.Key, _ lease.State) bool {
		if p := b.parts[k.Partition]; p != nil {
			p.q.noteGroup(k.Group)
		}
		return true
	})
	for _, p := range b.parts {
		b.refreshPending(p)
	}
}

// initScale fills what issue 7 keeps per queue from the recovered state.
func (b *Broker) initScale() {
	b.initCounters()
	b.buildReadyAtOpen()
}
