package broker

// Entry points for `comb import --from-queen` (issue 24): they store what another broker
// already decided (queue and partition ids, message ids and timestamps, cursors, leases, dead
// letters) instead of deciding it, through the same commit-log paths as configure, push, pop
// and the DLQ, so recovery and replication see an import as they see those requests.
// Every entry point is idempotent: what is already stored is skipped, never written twice.

import (
	"fmt"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/names"
)

// ImportQueue is a queue as another broker stored it.
type ImportQueue struct {
	ID              [16]byte
	Name            string
	Namespace, Task string
	CreatedAtMicros int64
	Options         QueueOptions
}

// ImportPartition is a partition as another broker stored it.
type ImportPartition struct {
	Queue           string
	Name            string
	ID              [16]byte
	CreatedAtMicros int64
}

// ImportQueueDef creates queue q with q.ID, or, when a queue of that name exists with that id,
// replaces its labels and options (a configure; durable before it returns). Errors:
// ErrBadRequest for a bad name or a queue of that name with another id (a different queue:
// nothing is changed), ErrClosed, or a commit-log error.
func (b *Broker) ImportQueueDef(in ImportQueue) error {
	if err := b.enterWrite(); err != nil {
		return err
	}
	defer b.leave()
	if err := nameErr(names.Queue, in.Name); err != nil {
		return err
	}
	opts := in.Options
	opts.MinPopWaitTime = min(max(opts.MinPopWaitTime, 0), 60000)
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	q := b.lookupQueue(in.Name)
	if q != nil && q.id != in.ID {
		return BadRequest(fmt.Sprintf("queue %s exists with id %s, not %s", in.Name, q.idStr, uuidString(in.ID)))
	}
	createdAt := in.CreatedAtMicros
	if q != nil {
		createdAt = q.createdAt
	}
	t, err := b.logMetaLocked(meta.Record{Kind: meta.KindQueuePut, ID: in.ID, CreatedAt: createdAt, Name: in.Name,
		Namespace: in.Namespace, Task: in.Task, Opts: opts})
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		return fmt.Errorf("broker: import queue %s: %w", in.Name, err)
	}
	conf := queueConf{namespace: in.Namespace, task: in.Task, opts: opts}
	if q != nil {
		q.conf.Store(&conf)
		return nil
	}
	q = b.newQueue(in.ID, in.Name, createdAt, conf)
	b.mu.Lock()
	b.queues[in.Name] = q
	b.mu.Unlock()
	return nil
}

// ImportPartitionDef creates partition in.Name of queue in.Queue (which must exist) with id
// in.ID; an existing partition of that name and id is left as it is. The metadata record is
// durable before the directory is made, as for a partition a push creates
// (createPartitionsLocked). Errors: ErrBadRequest (bad name, an existing partition or another
// partition with a different id), ErrNotFound (no such queue), ErrClosed, storage errors.
func (b *Broker) ImportPartitionDef(in ImportPartition) error {
	if err := b.enterWrite(); err != nil {
		return err
	}
	defer b.leave()
	if err := nameErr(names.Partition, in.Name); err != nil {
		return err
	}
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	q := b.lookupQueue(in.Queue)
	if q == nil {
		return NotFound("Queue not found")
	}
	if p := q.partition(in.Name); p != nil {
		if p.id != in.ID {
			return BadRequest(fmt.Sprintf("queue %s partition %s exists with id %s, not %s", in.Queue, in.Name, p.idStr, uuidString(in.ID)))
		}
		return nil
	}
	if other := b.lookupPartitionByID(in.ID); other != nil {
		return BadRequest(fmt.Sprintf("partition id %s is already queue %s partition %s", uuidString(in.ID), other.q.name, other.name))
	}
	p := &partition{id: in.ID, idStr: uuidString(in.ID), name: in.Name, q: q, createdAt: in.CreatedAtMicros}
	t, err := b.logMetaLocked(meta.Record{Kind: meta.KindPartitionCreate, ID: p.id, QueueID: q.id, CreatedAt: p.createdAt, Name: p.name})
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		return fmt.Errorf("broker: import queue %s partition %s: %w", in.Queue, in.Name, err)
	}
	if err := b.makePartitionDirs([]*partition{p}); err != nil {
		return err
	}
	b.mu.Lock()
	b.addPartitionLocked(p)
	b.mu.Unlock()
	return nil
}
