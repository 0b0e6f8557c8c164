package broker

import (
	"math"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// Retention (spec 2.2) runs in the maintenance task (maint_evict.go), one
// partition at a time under its partition lock, by whole segment files
// (segment.Log.DeleteFilesBefore: never the active file). For partition p at
// time now the cut offset is the highest of
//
//   - retentionEnabled + retentionSeconds: files whose newest segment is
//     older than retentionSeconds, consumed or not;
//   - retentionEnabled + completedRetentionSeconds: the same by age, but not
//     past the lowest cursor of the groups with a cursor on p;
//   - maxWaitTimeSeconds (whatever retentionEnabled says): files older than
//     that, consumed or not (Queen deletes what waited too long);
//
// capped so that no live lease loses a message (never past a leased span's
// start) and nothing not yet visible is cut. Cursors below the new low-water
// mark move up to it. A DLQ log loses its files older than the queue's
// shortest time rule (its entries go with their messages).
//
// This is how space comes back; what clients see is decided at read time
// (read_expire.go): a message past retentionSeconds or maxWaitTimeSeconds
// is never delivered nor counted, even while its file is the active one.

// retainPartition applies p's queue's time rules that r names at nowMicros.
func (b *Broker) retainPartition(p *partition, nowMicros int64, r timeRules) {
	cut, completed, first := retentionCuts(p, nowMicros, r)
	if cut <= first && completed <= first {
		return // nothing old enough: no lock taken, nothing loaded
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return
	}
	rows := b.groupStatesLocked(p)
	if cut = capRetentionCut(p, rows, cut, completed, first, nowMicros); cut <= first {
		return
	}
	files, bytes, err := p.log.DeleteFilesBefore(cut)
	if files > 0 {
		b.stats.retentionFiles.Add(uint64(files))
		b.stats.retentionBytes.Add(uint64(bytes))
	}
	if err != nil {
		b.log.Warn().Err(err).Str("queue", p.q.name).Str("partition", p.name).Msg("retention: deleting segment files")
	}
	if files == 0 {
		return
	}
	low := p.log.FirstOffset()
	// Cursor moves are the leader's (they reach the others in its
	// checkpoints); a node that leads later raises what it finds below
	// its low-water marks (rebuildReady).
	moved := b.leads() && b.raiseCursorsLocked(rows, low, nowMicros)
	b.refreshPending(p)
	b.log.Debug().Str("queue", p.q.name).Str("partition", p.name).Int("files", files).Int64("bytes", bytes).
		Uint64("lowWaterMark", low).Bool("cursorsMoved", moved).Msg("retention: deleted segment files")
}

// retentionCuts reads p's time rules (those r names) without its lock: cut
// is the offset the age rules (retentionSeconds, maxWaitTimeSeconds) allow
// cutting before,
// completed the one completedRetentionSeconds allows (before the groups'
// cursors cap it), first the current low-water mark. Nothing to cut unless
// one of them is past first.
func retentionCuts(p *partition, nowMicros int64, r timeRules) (cut, completed, first uint64) {
	o := p.q.options()
	rs, crs, mw := int64(0), int64(0), int64(0)
	if r.eviction {
		mw = o.MaxWaitTimeSeconds
	}
	if r.retention && o.RetentionEnabled {
		rs, crs = o.RetentionSeconds, o.CompletedRetentionSeconds
	}
	first = p.log.FirstOffset()
	if rs <= 0 && crs <= 0 && mw <= 0 {
		return first, first, first
	}
	before := func(secs int64) uint64 { return p.log.SealedBefore(nowMicros - secs*1_000_000) }
	cut = first
	if rs > 0 {
		cut = max(cut, before(rs))
	}
	if mw > 0 {
		cut = max(cut, before(mw))
	}
	if crs > 0 {
		completed = before(crs)
	}
	return cut, completed, first
}

// groupState is one consumer group's state on a partition.
type groupState struct {
	k  cursor.Key
	st lease.State
}

// groupStatesLocked returns the states of the groups with a cursor on p.
// The caller holds p.mu.
func (b *Broker) groupStatesLocked(p *partition) []groupState {
	var rows []groupState
	for g := range p.q.groupList() {
		k := cursor.Key{Partition: p.id, Group: g}
		if st, ok := b.cur.Get(k); ok {
			rows = append(rows, groupState{k, st})
		}
	}
	return rows
}

// capRetentionCut is the offset retention cuts p before: the age cut, or the
// completed cut where it is further but not past any group's cursor; never
// past what is visible nor into a live lease's span (no leased message is
// lost).
func capRetentionCut(p *partition, rows []groupState, cut, completed, first uint64, nowMicros int64) uint64 {
	if completed > first && len(rows) > 0 {
		minCommitted := uint64(math.MaxUint64)
		for _, r := range rows {
			minCommitted = min(minCommitted, r.st.Committed)
		}
		cut = max(cut, min(completed, minCommitted+1))
	}
	cut = min(cut, p.visible.Load())
	for _, r := range rows {
		if r.st.Lease.Live(nowMicros) {
			cut = min(cut, r.st.Lease.Start)
		}
	}
	return cut
}

// raiseCursorsLocked moves the cursors below the new low-water mark low up to
// it, dropping an expired lease over deleted messages; live leases were kept
// clear of the cut. It reports whether a cursor moved.
// The caller holds p.mu of the rows' partition.
func (b *Broker) raiseCursorsLocked(rows []groupState, low uint64, nowMicros int64) bool {
	moved := false
	for _, r := range rows {
		if r.st.Committed+1 >= low || r.st.Lease.Live(nowMicros) {
			continue
		}
		st := r.st
		st.Committed = low - 1
		if st.Lease.Held() && st.Lease.End < low {
			st.Lease = lease.Lease{} // an expired span over deleted messages
			st.Retries = 0
		}
		b.cur.Set(r.k, st)
		b.stats.retentionCursors.Add(1)
		moved = true
	}
	return moved
}

// retainDLQs drops, for every queue with a time rule r names, the DLQ files
// older than its shortest horizon.
func (b *Broker) retainDLQs(nowMicros int64, r timeRules) {
	for _, q := range b.sortedQueues() {
		o := q.options()
		h := int64(0)
		for _, s := range []int64{b.retentionIf(r.eviction, o.MaxWaitTimeSeconds), b.retentionIf(r.retention && o.RetentionEnabled, o.RetentionSeconds), b.retentionIf(r.retention && o.RetentionEnabled, o.CompletedRetentionSeconds)} {
			if s > 0 && (h == 0 || s < h) {
				h = s
			}
		}
		if h == 0 {
			continue
		}
		q.dlqMu.Lock()
		if q.dlq != nil {
			if cut := q.dlq.SealedBefore(nowMicros - h*1_000_000); cut > q.dlq.FirstOffset() {
				files, bytes, err := q.dlq.DeleteFilesBefore(cut)
				b.stats.retentionFiles.Add(uint64(files))
				b.stats.retentionBytes.Add(uint64(bytes))
				if err != nil {
					b.log.Warn().Err(err).Str("queue", q.name).Msg("retention: deleting DLQ files")
				}
			}
		}
		q.dlqMu.Unlock()
	}
}

func (b *Broker) retentionIf(enabled bool, secs int64) int64 {
	if enabled {
		return secs
	}
	return 0
}
