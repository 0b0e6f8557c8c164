package broker

import (
	"sync"
	"time"
)

// maintenance is the background task that evicts idle partitions (seed 004)
// and applies retention (maint_retention.go). Each tick visits at most
// Config.MaintenanceBatch partitions, round robin over a snapshot of the
// registry taken at the start of each cycle, so its cost per tick is bounded
// whatever the number of partitions. A cycle applies the retention rules
// when Config.RetentionInterval has passed since the last cycle that did, and
// maxWaitTimeSeconds when Config.EvictionInterval has (Queen's two
// services); idle eviction runs in every cycle.
type maintenance struct {
	mu    sync.Mutex // one tick at a time: the background loop or a test
	list  []*partition
	pos   int
	rules timeRules // what the current cycle applies
	// lastRetain, lastEvict: µs the last cycle applying each rule started.
	lastRetain, lastEvict int64
	stop                  chan struct{}
	done                  chan struct{}
}

// timeRules says which of the time rules a maintenance cycle applies.
type timeRules struct {
	retention bool // retentionSeconds, completedRetentionSeconds (RETENTION_INTERVAL)
	eviction  bool // maxWaitTimeSeconds (EVICTION_INTERVAL)
}

func (r timeRules) any() bool { return r.retention || r.eviction }

// dueRulesLocked decides, at the start of a cycle at nowMicros, which time
// rules it applies, and notes them as run. The caller holds m.mu.
func (m *maintenance) dueRulesLocked(cfg Config, nowMicros int64) timeRules {
	due := func(last *int64, every int64) bool {
		if *last != 0 && nowMicros-*last < every {
			return false
		}
		*last = nowMicros
		return true
	}
	return timeRules{
		retention: due(&m.lastRetain, cfg.RetentionInterval.Microseconds()),
		eviction:  due(&m.lastEvict, cfg.EvictionInterval.Microseconds()),
	}
}

func (b *Broker) startMaintenance() {
	if b.cfg.MaintenanceInterval < 0 {
		return
	}
	b.maint.stop, b.maint.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.maint.done)
		t := time.NewTicker(min(b.cfg.MaintenanceInterval, b.cfg.RetentionInterval, b.cfg.EvictionInterval))
		defer t.Stop()
		for {
			select {
			case <-b.maint.stop:
				return
			case <-t.C:
				b.maintain(b.now())
			}
		}
	}()
}

func (b *Broker) stopMaintenance() {
	if b.maint.stop == nil {
		return
	}
	close(b.maint.stop)
	<-b.maint.done
}

// maintain runs one tick at time now: for each partition visited, idle
// eviction, then the time rules its cycle applies (read-time expiry, then
// retention by whole file); when a cycle applying rules starts, the DLQ
// retention of every queue.
func (b *Broker) maintain(now time.Time) {
	if err := b.enter(); err != nil {
		return
	}
	defer b.leave()
	m := &b.maint
	m.mu.Lock()
	defer m.mu.Unlock()
	nowMicros := now.UnixMicro()
	rebuilt := false
	for range b.cfg.MaintenanceBatch {
		if m.pos >= len(m.list) {
			if rebuilt {
				break
			}
			m.list, m.pos, rebuilt = b.partitionList(m.list[:0]), 0, true
			if m.rules = b.dueRulesLocked(m, nowMicros); m.rules.any() {
				b.retainDLQs(nowMicros, m.rules)
			}
			if len(m.list) == 0 {
				break
			}
		}
		p := m.list[m.pos]
		m.list[m.pos] = nil
		m.pos++
		if p.isDamaged() {
			continue // out of service (damage.go): no retention on an unreadable log
		}
		b.evictIfIdleLocked(p, nowMicros)
		if m.rules.any() {
			b.expirePartition(p, nowMicros)
			b.retainPartition(p, nowMicros, m.rules)
		}
	}
	b.pruneNotes()
	b.tickSeries(now)
}

// expirePartition is the maintenance sweep's share of expiry (a claim's is
// readLiveSpanLocked, read_expire.go): it raises p's mark for its queue's
// time rules at nowMicros without loading a released log. When even the
// newest message is expired the mark goes to the visible end; otherwise a
// loaded log is searched with its time index, and a released one is left for
// its next pop (whole-file retention still runs on it).
func (b *Broker) expirePartition(p *partition, nowMicros int64) {
	cutoff := expiryCutoff(p.q.options(), nowMicros)
	if cutoff == 0 {
		return
	}
	vis := p.visible.Load()
	if p.liveFrom() >= vis {
		return
	}
	if p.log.LastTimestamp() < cutoff {
		p.raiseExpired(vis)
		b.refreshPending(p)
		return
	}
	if p.log.Loaded() {
		b.expireTo(p, cutoff, vis) // on a failed lookup the next pop finds them
	}
}

// dueRulesLocked is which retention rules this cycle applies. A node
// following a replicated log applies them too, to its files only
// (retainPartition): the rules read message timestamps, cursors and leases,
// which every node holds alike, and what they cut is already invisible to
// pops (read_expire.go) or consumed by every group. The caller holds
// b.maint.mu.
func (b *Broker) dueRulesLocked(m *maintenance, nowMicros int64) timeRules {
	return m.dueRulesLocked(b.cfg, nowMicros)
}

// leads reports whether this node moves cursors and leases: always on a
// single node, only as the ready leader of a replicated log.
func (b *Broker) leads() bool {
	return b.cfg.Replicated == nil || b.cfg.Replicated.Leading()
}

// partitionList appends every live partition to dst.
func (b *Broker) partitionList(dst []*partition) []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, p := range b.parts {
		dst = append(dst, p)
	}
	return dst
}

// evictIfIdleLocked releases p's log (file handles, dedup table) once the
// maintenance task has seen it unused for Config.IdleEvict (seed 004: a
// partition idle for 10 minutes leaves memory; its next message or pop loads
// it again, see segment.Log.Release). The partition lock is only tried: a
// push, claim or ack holding it means p is not idle. The caller holds
// b.maint.mu.
func (b *Broker) evictIfIdleLocked(p *partition, nowMicros int64) {
	if b.cfg.IdleEvict < 0 {
		return
	}
	if p.log.TakeUsed() || p.idleSince == 0 {
		p.idleSince = nowMicros
		return
	}
	// A log the handle cache closed keeps its dedup index (segment
	// dedup_budget.go): an idle one gives that back too.
	if (!p.log.Loaded() && !p.log.DedupLoaded()) || nowMicros-p.idleSince < b.cfg.IdleEvict.Microseconds() {
		return
	}
	if !p.mu.TryLock() {
		return
	}
	if !p.deleted && p.log.Release() {
		b.stats.evictions.Add(1)
		p.forgetAllClaimedLocked(&b.claimed)
	}
	p.mu.Unlock()
}
