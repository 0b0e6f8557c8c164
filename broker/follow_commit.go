package broker

import (
	"errors"
	"sync/atomic"

	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// What a replicated node keeps of its files, and a deposed leader (issue 15,
// docs/replication.md "A deposed leader").
//
// A leader appends a push's segment to its partition file before the entry
// commits (the single node's write path, kept), so its file can hold
// segments the cluster never committed: the leader was killed, or lost its
// leadership, between the two, and the next leader gives those offsets to
// other messages. So a replicated node tracks, per partition and DLQ log, the
// offset below which its file holds only committed segments
// (partition.committed, queue.dlqCommitted); the flush pass records no more
// than that in meta/summaries; and Open cuts every log back to its summary
// (openByPlan). Raft applies again every committed entry after its last
// snapshot, whose flush pass the summaries cover, so what the cut removed
// and the cluster committed comes back, at the same offsets.
//
// A leader that loses its leadership also holds in memory claims, acks,
// metadata and stream state that may never commit, and cannot take them
// back one by one. It freezes instead (isStale): it applies no more
// entries and writes no more state files (no flush pass, no cursor
// snapshot, no clean marker), and comb serve restarts its process, which
// recovers the committed state from its files and raft's log, as after a
// kill -9.

// ErrStale is returned by the flush pass and by ApplyReplicated on a node
// whose memory may differ from the committed state (it lost its leadership
// with writes possibly in flight, or received another node's snapshot):
// nothing more is written until its process restarts.
var ErrStale = errors.New("broker: this node's memory may differ from the committed state (leadership lost with writes in flight, or another node's snapshot received); it must restart to recover")

// CommittedOwn hears that an entry this node proposed as leader committed:
// package replica calls it from raft's apply goroutine, in log order, for
// the entries it does not hand to ApplyReplicated. A Push or DLQ entry
// raises its log's committed offset; other kinds change nothing here.
func (b *Broker) CommittedOwn(lsn uint64, kind byte, payload []byte) {
	if kind != walPush && kind != walDLQ {
		return
	}
	id, seg, err := walentry.SplitLog(payload)
	if err != nil {
		return
	}
	base, count, _, err := segment.PeekSegment(seg)
	if err != nil {
		return
	}
	next := base + uint64(count)
	if kind == walPush {
		if p := b.lookupPartitionByID(id); p != nil {
			raiseTo(&p.committed, next)
		}
		return
	}
	if q := b.queueByID(id); q != nil {
		raiseTo(&q.dlqCommitted, next)
	}
}

// raiseTo sets v to n unless it holds more already.
func raiseTo(v *atomic.Uint64, n uint64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// markAllCommitted sets every partition's committed offset to its log's next
// offset: at Open, once the logs are cut back and the local replay is done,
// everything a replicated node's files hold was committed.
func (b *Broker) markAllCommitted() {
	for _, p := range b.partitionList(nil) {
		raiseTo(&p.committed, p.log.NextOffset())
	}
}

// committedNext is the offset up to which a flush pass may record p's file
// as durable: its next offset on a single node, no more than what the
// cluster committed on a replicated one (noted before the sync, as next is).
func (b *Broker) committedNext(p *partition, next uint64) uint64 {
	if b.cfg.Replicated == nil {
		return next
	}
	return max(min(next, p.committed.Load()), 1)
}

// committedDLQNext is committedNext for q's DLQ log (0: it has none).
func (b *Broker) committedDLQNext(q *queue, next uint64) uint64 {
	if b.cfg.Replicated == nil || next == 0 {
		return next
	}
	return max(min(next, q.dlqCommitted.Load()), 1)
}

// isStale reports whether this node must restart (ReplicatedLog.Stale): it
// then writes nothing more (see the top of this file). The replicated log
// closes Stale before it stops reporting Leading, so a flush pass that finds
// the node not leading also finds it stale if it led.
func (b *Broker) isStale() bool {
	r := b.cfg.Replicated
	if r == nil {
		return false
	}
	select {
	case <-r.Stale():
		return true
	default:
		return false
	}
}

// Stale is closed when this node must restart to recover the committed
// state (nil channel, never closed, on a single node): comb serve then
// re-executes itself (docs/replication.md, "A deposed leader").
func (b *Broker) Stale() <-chan struct{} {
	if b.cfg.Replicated == nil {
		return nil
	}
	return b.cfg.Replicated.Stale()
}
