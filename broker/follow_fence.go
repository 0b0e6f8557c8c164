package broker

import (
	"context"
	"time"
)

// minFence is seed 004's figure: "a new leader waits about half a second
// before it serves pops, so the same messages are never given out twice".
const minFence = 500 * time.Millisecond

// fence is how long a new leader waits after its election before it serves
// what reads or moves leases and cursors: seed 004's half second, or longer
// where the configuration needs it: a deposed leader cut off from the quorum
// acts as one for at most raft's LeaderLeaseTimeout (250 ms by default,
// replica.DefaultLeaderLeaseTimeout), and what it changed in memory meanwhile
// reaches the log within one checkpoint interval (5 ms) or never. No
// clock-skew bound is needed: the leases a new leader holds were rebased on
// its own clock when it applied their checkpoints (cursor.Engine.ApplyCommitted,
// issue 22), so it never ends one before the old leader's clock would.
func (b *Broker) fence() time.Duration {
	return max(minFence, b.cfg.Replicated.LeaderLeaseTimeout()+b.cfg.CheckpointInterval)
}

func (b *Broker) waitFence(ctx context.Context) error {
	r := b.cfg.Replicated
	if r == nil {
		return nil
	}
	since := r.LeaderSince()
	if since.IsZero() {
		return ErrNotLeader
	}
	if d := time.Until(since.Add(b.fence())); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-b.closing:
			return ErrClosed
		}
	}
	b.rebuildReady(r.LeaderTerms())
	return nil
}

// rebuildReady, once per term this node leads, recomputes the queues' group
// names and pending counters (initCounters), raises cursors below their
// partition's low-water mark and rebuilds the ready structure of every
// group, from the cursors (scanReady): while it
// followed, applied checkpoints moved leases and cursors without telling
// those structures (an applied push does tell them), so a partition another
// leader released could sit deferred until its old lease's expiry.
func (b *Broker) rebuildReady(term uint64) {
	if b.readyTerm.Load() == term {
		return
	}
	b.readyMu.Lock()
	defer b.readyMu.Unlock()
	if b.readyTerm.Load() == term {
		return
	}
	now := b.now().UnixMicro()
	// Applied checkpoints named groups and moved cursors without telling
	// the queues' group names and pending counters: as at Open.
	b.initCounters()
	// Retention on a follower cut files without moving cursors
	// (maint_retention.go): cursors below a low-water mark move up first.
	for _, p := range b.partitionList(nil) {
		p.mu.Lock()
		if !p.deleted && !p.isDamaged() && b.raiseCursorsLocked(b.groupStatesLocked(p), p.log.FirstOffset(), now) {
			b.refreshPending(p)
		}
		p.mu.Unlock()
	}
	for _, q := range b.sortedQueues() {
		q.mu.Lock()
		for group := range q.groups {
			g := newGroupReady()
			b.scanReady(g, q.list, group, now)
			q.groups[group] = g
		}
		q.mu.Unlock()
	}
	b.buildReadyAtOpen() // the groups no pop contacted since Open
	b.readyTerm.Store(term)
}
