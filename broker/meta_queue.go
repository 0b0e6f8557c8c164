package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/names"
)

// Configure creates or reconfigures a queue (spec 2): a whole replace of
// labels and options (options left out are defaults, spec 2.2), creating the
// Default partition if missing. Journaled and fsynced before it returns.
// Existing messages, cursors and leases are untouched.
//
// Errors: ErrBadRequest for a bad name or label, ErrClosed, storage errors.
func (b *Broker) Configure(req ConfigureRequest) (ConfigureResult, error) {
	if err := b.enterWrite(); err != nil {
		return ConfigureResult{}, err
	}
	defer b.leave()
	if err := nameErr(names.Queue, req.Queue); err != nil {
		return ConfigureResult{}, err
	}
	if err := labelErr(names.Namespace, req.Namespace); err != nil {
		return ConfigureResult{}, err
	}
	if err := labelErr(names.Task, req.Task); err != nil {
		return ConfigureResult{}, err
	}
	opts := req.Options
	opts.MinPopWaitTime = min(max(opts.MinPopWaitTime, 0), 60000)
	var parts []*partition
	var q *queue
	for {
		var err error
		if parts, err = b.ensurePartitions([]partKey{{req.Queue, DefaultPartition}}); err != nil {
			return ConfigureResult{}, err
		}
		q = parts[0].q
		b.metaMu.Lock()
		if !q.deleted.Load() {
			break // deleted in between: make it again
		}
		b.metaMu.Unlock()
	}
	t, err := b.logMetaLocked(meta.Record{Kind: meta.KindQueuePut, ID: q.id, CreatedAt: q.createdAt, Name: q.name,
		Namespace: req.Namespace, Task: req.Task, Opts: opts})
	if err == nil {
		q.conf.Store(&queueConf{namespace: req.Namespace, task: req.Task, opts: opts})
	}
	b.metaMu.Unlock()
	if err == nil {
		err = t.Wait()
	}
	if errors.Is(err, meta.ErrRecordTooLarge) {
		return ConfigureResult{}, BadRequest("namespace and task must be at most 255 characters")
	}
	if err != nil {
		return ConfigureResult{}, fmt.Errorf("broker: configure %s: %w", req.Queue, err)
	}
	return ConfigureResult{QueueID: q.idStr, PartitionID: parts[0].idStr, Queue: q.name,
		Namespace: req.Namespace, Task: req.Task, Options: opts, StoredPlain: opts.EncryptionEnabled && b.cfg.Keys == nil}, nil
}

// DeleteQueue deletes a queue with its partitions, messages, DLQ entries,
// cursors, leases and subscription records (spec 7.7, 11 #47). It reports
// whether the queue existed; deleting a missing queue is not an error.
//
// Durability: the delete is journaled (fsynced) first; files are removed
// after, and a crash in between is finished by Open (checkStrayDirs).
func (b *Broker) DeleteQueue(name string) (bool, error) {
	if err := b.enterWrite(); err != nil {
		return false, err
	}
	defer b.leave()
	b.metaMu.Lock()
	q := b.lookupQueue(name)
	if q == nil {
		b.metaMu.Unlock()
		return false, b.deleteSubscriptionsOf(name)
	}
	// The delete is durable before anything is removed: a crash in between
	// finishes it at the next start (checkStrayDirs).
	t, err := b.logMetaLocked(meta.Record{Kind: meta.KindQueueDelete, ID: q.id})
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		b.metaMu.Unlock()
		return true, fmt.Errorf("broker: delete queue %s: %w", name, err)
	}
	parts := b.unregisterQueueLocked(q)
	b.metaMu.Unlock()
	b.dropQueueState(q, parts)
	b.dropCursorsOf(parts)
	b.dropStreamPartitions(parts)
	if err := b.deleteSubscriptionsOf(name); err != nil {
		return true, err
	}
	return true, b.removeQueueFiles(q, parts)
}

// unregisterQueueLocked takes q and its partitions out of the registry and
// keeps their ids as tombstones (for a metadata snapshot). It returns the
// partitions. The caller holds metaMu.
func (b *Broker) unregisterQueueLocked(q *queue) []*partition {
	b.mu.Lock()
	delete(b.queues, q.name)
	parts := q.partitionsSnapshot()
	for _, p := range parts {
		delete(b.parts, p.id)
		b.nParts--
	}
	q.deleted.Store(true)
	b.mu.Unlock()
	b.tombstones[q.id] = true
	for _, p := range parts {
		b.tombstones[p.id] = true
	}
	return parts
}

// dropQueueState marks a deleted queue's partitions deleted (a request that
// still holds one sees it under its lock) and closes their logs and the DLQ.
func (b *Broker) dropQueueState(q *queue, parts []*partition) {
	b.series.Drop(q.id)
	for _, p := range parts {
		p.mu.Lock()
		p.deleted = true
		p.forgetAllClaimedLocked(&b.claimed)
		if err := p.log.Close(); err != nil {
			b.log.Warn().Err(err).Str("queue", q.name).Str("partition", p.name).Msg("delete queue: closing log")
		}
		p.mu.Unlock()
	}
	q.dlqMu.Lock()
	if q.dlq != nil {
		q.dlq.Close()
		q.dlq = nil
	}
	q.dlqMu.Unlock()
}

// dropCursorsOf deletes the cursors and leases of deleted partitions (the
// next checkpoint records it; a follower gets the leader's instead).
func (b *Broker) dropCursorsOf(parts []*partition) {
	ids := make(map[[16]byte]bool, len(parts))
	for _, p := range parts {
		ids[p.id] = true
	}
	var keys []cursor.Key
	b.cur.Range(func(k cursor.Key, _ lease.State) bool {
		if ids[k.Partition] {
			keys = append(keys, k)
		}
		return true
	})
	for _, k := range keys {
		b.cur.Delete(k)
	}
}

// removeQueueFiles removes a deleted queue's partition and DLQ directories
// and wakes its parked pops (they find nothing and answer 204). What it
// cannot remove, the next start does (checkStrayDirs).
func (b *Broker) removeQueueFiles(q *queue, parts []*partition) error {
	var errs []error
	for _, p := range parts {
		if err := b.partFS().RemoveAll(filepath.Join(b.dir, meta.PartitionsDir, p.idStr)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.fs.RemoveAll(filepath.Join(b.dir, meta.DLQDir, q.idStr)); err != nil {
		errs = append(errs, err)
	}
	q.gate.Fire()
	if len(errs) > 0 {
		return fmt.Errorf("broker: delete queue %s: %v", q.name, errs)
	}
	return nil
}

func (b *Broker) deleteSubscriptionsOf(queueName string) error {
	var groups []string
	b.cur.RangeSubscriptions(func(queue, g string, _ cursor.Subscription) bool {
		if queue == queueName {
			groups = append(groups, g)
		}
		return true
	})
	for _, g := range groups {
		b.cur.DeleteSubscription(queueName, g)
	}
	return b.closedErr(b.cur.Wait())
}
