package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
)

// createPartitionsLocked makes the queues and partitions keys name that out
// does not hold yet, and fills out. The caller holds metaMu, not mu: the
// syncs below never hold the registry lock, so pushes, pops and acks on
// existing partitions do not wait for them.
//
// Durability: the metadata records go to the commit log as one entry and are
// waited for (one group commit, shared with everything else in flight; the
// metadata lock is held across it, the registry lock is not); then each new
// partition's directory is made with its DESCRIPTOR, without a sync (the
// flush pass syncs them, flushDirs), and they enter the registry. Recovery
// makes a directory a crash lost again from the durable entry. A new
// partition costs a commit-log record and two inodes, no fsync of its own.
func (b *Broker) createPartitionsLocked(keys []partKey, out []*partition) ([]*partition, error) {
	nowMicros := b.now().UnixMicro()
	var recs []meta.Record
	newQueues := make(map[string]*queue)
	type newPart struct {
		p    *partition
		idxs []int
	}
	newParts := make(map[partKey]*newPart)
	var order []*newPart
	b.mu.RLock()
	for i, k := range keys {
		if out[i] != nil {
			continue
		}
		q := b.queues[k.queue]
		if q == nil {
			q = newQueues[k.queue]
		}
		if q == nil {
			ns, task := labelsFromName(k.queue)
			q = b.newQueue(newV7(), k.queue, nowMicros, queueConf{namespace: ns, task: task, opts: DefaultQueueOptions()})
			newQueues[k.queue] = q
			recs = append(recs, meta.Record{Kind: meta.KindQueuePut, ID: q.id, CreatedAt: nowMicros, Name: k.queue, Namespace: ns, Task: task, Opts: DefaultQueueOptions()})
		}
		if p := q.partition(k.partition); p != nil {
			out[i] = p
			continue
		}
		np := newParts[k]
		if np == nil {
			id := newV7()
			np = &newPart{p: &partition{id: id, idStr: uuidString(id), name: k.partition, q: q, createdAt: nowMicros}}
			newParts[k] = np
			order = append(order, np)
			recs = append(recs, meta.Record{Kind: meta.KindPartitionCreate, ID: id, QueueID: q.id, CreatedAt: nowMicros, Name: k.partition})
		}
		np.idxs = append(np.idxs, i)
	}
	b.mu.RUnlock()
	if len(recs) == 0 {
		return out, nil
	}
	parts := make([]*partition, len(order))
	for i, np := range order {
		parts[i] = np.p
	}
	// The records are durable before any directory exists: a directory
	// (and the records a push writes into it) can then never outlive a
	// creation the commit log lost, which the start-up rule would have to
	// take for a lost journal.
	t, err := b.logMetaLocked(recs...)
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		return nil, err
	}
	dirErr := b.makePartitionDirs(parts)
	if dirErr != nil {
		// Durable records without directories: the partitions exist (a
		// request naming them again must find these, not make others), out
		// of service until a restart makes their directories.
		for _, p := range parts {
			dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
			p.log = segment.OpenSummary(dir, b.segOpts, segment.Summary{})
			p.visible.Store(p.log.NextOffset())
			b.markDamaged(p, &segment.CorruptionError{File: dir, Reason: "its directory could not be made (" + dirErr.Error() + "); restart the server to make it"})
		}
	}
	b.mu.Lock()
	for name, q := range newQueues {
		b.queues[name] = q
	}
	for _, np := range order {
		b.addPartitionLocked(np.p)
		for _, i := range np.idxs {
			out[i] = np.p
		}
	}
	b.mu.Unlock()
	if dirErr != nil {
		return nil, dirErr
	}
	return out, nil
}

// makePartitionDirs gives each new partition its directory, DESCRIPTOR and
// log (segment.Create: a mkdir and a stat; the segment file comes with the
// first append), without a sync: flushDirs makes them durable later, and the
// commit log covers them until then. On error nothing is left behind.
func (b *Broker) makePartitionDirs(parts []*partition) error {
	errs := make([]error, len(parts))
	parallelFor(len(parts), func(i int) {
		p := parts[i]
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		l, err := segment.Create(dir, b.segOpts)
		if err == nil {
			p.log = l
			p.visible.Store(l.NextOffset())
			err = meta.WriteDescriptor(b.fs, dir, partitionDescriptor(p), true)
		}
		if err != nil {
			errs[i] = fmt.Errorf("broker: queue %s partition %s (%s): %w", p.q.name, p.name, p.idStr, err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		b.discardPartitionDirs(parts)
		return err
	}
	for _, p := range parts {
		b.noteDir(filepath.Join(b.dir, meta.PartitionsDir, p.idStr))
	}
	return nil
}

// discardPartitionDirs closes and removes directories made for partitions
// whose creation failed (they hold no records).
func (b *Broker) discardPartitionDirs(parts []*partition) {
	for _, p := range parts {
		if p.log != nil {
			p.log.Close()
		}
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		if err := b.fs.RemoveAll(dir); err != nil {
			b.log.Warn().Err(err).Str("dir", dir).Msg("create partition: removing the directory of a failed creation (the next start removes it)")
		}
	}
}

// ensurePartitionsDir creates <data>/partitions and <data>/dlq at Open (and
// syncs the data directory when it made one), so creating a partition or a
// DLQ is a single mkdir whose parent is durable.
func (b *Broker) ensurePartitionsDir() error {
	made := false
	for _, sub := range []string{meta.PartitionsDir, meta.DLQDir} {
		dir := filepath.Join(b.dir, sub)
		ok, err := existsDir(b.fs, dir)
		if err == nil && !ok {
			err = b.fs.MkdirAll(dir)
			made = true
		}
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	if made && !b.noSync() {
		return b.syncDir(b.dir)
	}
	return nil
}

// syncDir fsyncs a directory so that entries created in it survive a crash.
func (b *Broker) syncDir(dir string) error {
	if err := b.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
