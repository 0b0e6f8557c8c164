package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/clock"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
)

// ApplyReplicated applies one committed entry another node proposed, on a
// node whose commit log is replicated (Config.Replicated): the follower side
// of issue 15. It is the start-up replay of that entry kind (replayEntry),
// run on an open broker, so an entry the files already hold (raft applies
// entries again after a start) changes nothing; Meta entries, which the
// start-up replay folds into the registry in one piece, are applied one by
// one (applyReplicatedMeta). Pushed messages are published at once (the
// entry is committed), as the leader's push publishes them. Called by one
// goroutine (raft's), in LSN order.
//
// Errors: ErrClosed, a payload that does not decode, or a failed write to
// this node's files; the caller stops applying (the node's state would
// diverge).
func (b *Broker) ApplyReplicated(lsn uint64, kind byte, payload []byte) error {
	// Close waits for an apply under way, and none starts once it began:
	// nothing is applied to closed logs or a closed cursor engine.
	if err := b.enter(); err != nil {
		return closingError{err}
	}
	defer b.leave()
	if b.isStale() {
		return ErrStale
	}
	if kind == walMeta {
		return b.applyReplicatedMeta(lsn, payload)
	}
	if _, err := b.replayEntry(lsn, kind, payload, 0, b.cur.ApplyCommitted); err != nil {
		return fmt.Errorf("broker: replicated entry %d: %w", lsn, err)
	}
	if kind == walPush {
		// As the leader's push does once committed: visible, counted in the
		// queue's pending depth, known to the groups' ready structures (a
		// node that led before and leads again finds the partition there)
		// and parked pops woken.
		id, seg, _ := walentry.SplitLog(payload)
		_, _, ts, err := segment.PeekSegment(seg)
		if p := b.lookupPartitionByID(id); p != nil && err == nil && !p.isDamaged() {
			next := p.log.NextOffset()
			raiseTo(&p.committed, next)
			b.publish(p, next, ts)
		}
	}
	if kind == walDLQ {
		if id, _, err := walentry.SplitLog(payload); err == nil {
			if q := b.queueByID(id); q != nil {
				raiseTo(&q.dlqCommitted, b.dlqNext(q))
			}
		}
	}
	return nil
}

// applyReplicatedMeta applies a Meta entry's records to the registry, as the
// leader did when it appended them: a queue created or reconfigured, a
// partition created with its directory, a queue deleted with its files.
func (b *Broker) applyReplicatedMeta(lsn uint64, payload []byte) error {
	recs, err := decodeMetaEntry(payload)
	if err != nil {
		return fmt.Errorf("broker: replicated entry %d: %w", lsn, err)
	}
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	b.flush.metaDirty = true
	for _, r := range recs {
		switch r.Kind {
		case meta.KindQueuePut:
			b.putReplicatedQueueLocked(r)
		case meta.KindPartitionCreate:
			if err := b.createReplicatedPartitionLocked(r); err != nil {
				return fmt.Errorf("broker: replicated entry %d: %w", lsn, err)
			}
		case meta.KindDescribed:
			b.described = true
		case meta.KindQueueDelete:
			b.deleteReplicatedQueueLocked(r.ID)
		}
	}
	return nil
}

// putReplicatedQueueLocked creates the queue r names or replaces its
// configuration (the caller holds metaMu).
func (b *Broker) putReplicatedQueueLocked(r meta.Record) {
	c := queueConf{namespace: r.Namespace, task: r.Task, opts: r.Opts}
	if q := b.queueByID(r.ID); q != nil {
		q.conf.Store(&c)
		return
	}
	q := b.newQueue(r.ID, r.Name, r.CreatedAt, c)
	b.mu.Lock()
	b.queues[q.name] = q
	b.mu.Unlock()
}

// createReplicatedPartitionLocked makes the partition r names, with its
// directory (makePartitionDirs: no sync, the flush pass makes it durable),
// unless this node has it (the caller holds metaMu).
func (b *Broker) createReplicatedPartitionLocked(r meta.Record) error {
	if b.lookupPartitionByID(r.ID) != nil {
		return nil
	}
	q := b.queueByID(r.QueueID)
	if q == nil {
		return fmt.Errorf("partition %s names queue %s, which this node does not have", uuidString(r.ID), uuidString(r.QueueID))
	}
	p := &partition{id: r.ID, idStr: uuidString(r.ID), name: r.Name, q: q, createdAt: r.CreatedAt}
	if err := b.makePartitionDirs([]*partition{p}); err != nil {
		// As on the leader: the partition exists, out of service until a
		// restart makes its directory.
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		p.log = segment.OpenSummary(dir, b.segOpts, segment.Summary{})
		p.visible.Store(p.log.NextOffset())
		b.markDamaged(p, &segment.CorruptionError{File: dir, Reason: "its directory could not be made (" + err.Error() + "); restart the server to make it"})
	}
	b.mu.Lock()
	b.addPartitionLocked(p)
	b.mu.Unlock()
	return nil
}

// deleteReplicatedQueueLocked deletes a queue as DeleteQueue does after its
// entry is durable, except for its cursors and subscription records: the
// leader's deletions of those come in its next checkpoint, and a follower
// appends none (the caller holds metaMu).
func (b *Broker) deleteReplicatedQueueLocked(id [16]byte) {
	q := b.queueByID(id)
	if q == nil {
		return
	}
	parts := b.unregisterQueueLocked(q)
	b.dropQueueState(q, parts)
	b.dropStreamPartitions(parts)
	if err := b.removeQueueFiles(q, parts); err != nil {
		b.log.Warn().Err(err).Str("queue", q.name).Msg("replication: removing a deleted queue's files (the next start does)")
	}
}

// Flush runs a flush pass (flush.go) now: every entry applied so far is
// durable in this node's files. Package replica runs it before a raft
// snapshot lets raft drop those entries from its log, which, unlike the local
// commit log's truncation, knows nothing of the transactions and notes whose
// effects are still being applied: so the pass waits for those up to the
// applied LSN first (at most snapshotInflightWait; they take milliseconds).
//
// Errors: ErrClosed, ErrStale, a transaction still in flight after the wait
// (raft takes the snapshot later), the pass's.
func (b *Broker) Flush() error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if err := b.waitInflightThrough(b.wal.DurableLSN(), snapshotInflightWait); err != nil {
		return err
	}
	return b.flushPass()
}

// snapshotInflightWait bounds Flush's wait for in-flight transactions.
const snapshotInflightWait = 5 * time.Second

// waitInflightThrough waits until no entry at or below lsn is in flight
// (txInflight, appendInflight), waking each time one leaves the set
// (txApplied) rather than polling, for at most max on the broker's clock.
func (b *Broker) waitInflightThrough(lsn uint64, max time.Duration) error {
	var timeout clock.Timer
	for {
		b.flush.stateMu.Lock()
		oldest := uint64(0)
		for l := range b.flush.inflight {
			if oldest == 0 || l < oldest {
				oldest = l
			}
		}
		var left chan struct{}
		if oldest != 0 && oldest <= lsn {
			if b.flush.leftInflight == nil {
				b.flush.leftInflight = make(chan struct{})
			}
			left = b.flush.leftInflight
		}
		b.flush.stateMu.Unlock()
		if left == nil {
			return nil
		}
		if timeout == nil {
			timeout = b.waits.NewTimer(max)
			defer timeout.Stop()
		}
		select {
		case <-left:
		case <-timeout.C():
			return fmt.Errorf("broker: entry %d still being applied after %v; snapshot later", oldest, max)
		case <-b.closing:
			return ErrClosed
		}
	}
}

// raiseTxCommitted raises the committed offsets of the logs a transaction
// appended to on a follower (replayTx): applied in log order, all of it is
// committed. Without it a restart would cut them (follow_commit.go) when the
// leader's own push entries for them never came (it died in between).
func (b *Broker) raiseTxCommitted(rec *walentry.TxRecord) {
	for _, push := range rec.Pushes {
		if p := b.lookupPartitionByID(push.Partition); p != nil {
			raiseTo(&p.committed, p.log.NextOffset())
		}
	}
	for _, d := range rec.DLQ {
		if q := b.queueByID(d.Queue); q != nil {
			raiseTo(&q.dlqCommitted, b.dlqNext(q))
		}
	}
}

// closingError is ApplyReplicated's refusal on a closing broker: raft still
// runs while Close's last flush pass commits its checkpoint, and what it
// applies meanwhile comes again at the next start (raft restarts from its
// snapshot). Closing tells package replica it is no divergence.
type closingError struct{ err error }

func (e closingError) Error() string { return e.err.Error() }
func (e closingError) Unwrap() error { return e.err }
func (closingError) Closing() bool   { return true }
