package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
)

// partKey names a (queue, partition) a push or transaction targets.
type partKey struct{ queue, partition string }

// ensurePartitions returns the partitions for keys, creating missing queues
// (labels from the name, default options; spec 1.3) and partitions
// (createPartitionsLocked). Existing partitions cost one shared registry
// lookup; missing ones join a creation batch (createBatched), so that
// requests creating partitions at the same time share one commit-log wait.
func (b *Broker) ensurePartitions(keys []partKey) ([]*partition, error) {
	if out, missing := b.lookupPartitions(keys); !missing {
		return out, nil
	}
	if err := b.createBatched(keys); err == nil {
		if out, missing := b.lookupPartitions(keys); !missing {
			return out, nil
		}
	}
	// The batch failed (or a delete raced it): this request's keys alone,
	// so that its answer is its own keys' error.
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	// Another request may have made them while this one waited.
	out, missing := b.lookupPartitions(keys)
	if !missing {
		return out, nil
	}
	return b.createPartitionsLocked(keys, out)
}

// createBatch is the keys of the requests that wait to create partitions
// together (createBatched); done closes when the batch's creation ended,
// with err.
type createBatch struct {
	keys []partKey
	done chan struct{}
	err  error
}

// maxCreateBatch bounds the keys of one creation batch (one commit-log entry
// of metadata records); a request arriving at a full batch starts the next.
const maxCreateBatch = 4096

// createBatched creates the missing partitions of keys together with those
// of every other request that arrives while a creation holds metaMu: the
// first to arrive leads a batch, the others join it and wait; the leader
// takes metaMu once the creation before it is done (its commit-log wait
// included) and creates the whole batch, so N concurrent first pushes to
// new partitions cost one metadata entry and one group commit instead of N
// in a row (each used to hold metaMu across its own fdatasync: at 100,000
// partitions creation ran one at a time, issue 14). Errors: the batch's
// creation error, for every request in it (ensurePartitions then retries
// its own keys alone).
func (b *Broker) createBatched(keys []partKey) error {
	b.createMu.Lock()
	cb := b.creating
	leader := cb == nil || len(cb.keys)+len(keys) > maxCreateBatch
	if leader {
		cb = &createBatch{done: make(chan struct{})}
		b.creating = cb
	}
	cb.keys = append(cb.keys, keys...)
	b.createMu.Unlock()
	if !leader {
		<-cb.done
		return cb.err
	}
	b.metaMu.Lock()
	b.createMu.Lock()
	if b.creating == cb {
		b.creating = nil // later arrivals start the next batch
	}
	all := cb.keys
	b.createMu.Unlock()
	out, missing := b.lookupPartitions(all)
	if missing {
		_, cb.err = b.createPartitionsLocked(all, out)
	}
	b.metaMu.Unlock()
	close(cb.done)
	return cb.err
}

// lookupPartitions resolves keys to live partitions; missing says whether
// some are not there.
func (b *Broker) lookupPartitions(keys []partKey) (out []*partition, missing bool) {
	out = make([]*partition, len(keys))
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i, k := range keys {
		if q := b.queues[k.queue]; q != nil {
			out[i] = q.partition(k.partition)
		}
		if out[i] == nil {
			missing = true
		}
	}
	return out, missing
}

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
	c := b.planCreation(keys, out, b.now().UnixMicro())
	if len(c.recs) == 0 {
		return out, nil
	}
	parts := make([]*partition, len(c.order))
	for i, np := range c.order {
		parts[i] = np.p
	}
	// The records are durable before any directory exists: a directory
	// (and the records a push writes into it) can then never outlive a
	// creation the commit log lost, which the start-up rule would have to
	// take for a lost journal.
	t, err := b.logMetaLocked(c.recs...)
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		return nil, b.noSpace("the commit log", err)
	}
	dirErr := b.makePartitionDirs(parts)
	if dirErr != nil {
		// Durable records without directories (a full disk, issue 21): the
		// partitions exist (a request naming them again must find these,
		// not make others) and serve; the next append to each makes its
		// directory (ensurePartitionDir), so none needs a restart, and a
		// restart makes them too. A directory that could not be made is
		// not damage: nothing on disk is wrong.
		for _, p := range parts {
			dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
			p.log = segment.OpenSummary(dir, b.segOpts, segment.Summary{})
			p.visible.Store(p.log.NextOffset())
			p.dirPending.Store(true)
		}
	}
	b.registerCreation(c, out)
	if dirErr != nil {
		return nil, b.noSpace("a new partition's directory", dirErr)
	}
	return out, nil
}

// ensurePartitionDir makes p's directory and DESCRIPTOR when its creation
// could not (p.dirPending; createPartitionsLocked), before anything is
// appended to it. The caller holds p.mu. p.log stays the Log opened from
// the empty summary: its first use lists the directory made here. On error
// nothing is left behind and p stays pending (the next append tries again);
// a full disk answers ErrNoSpace.
func (b *Broker) ensurePartitionDir(p *partition) error {
	if !p.dirPending.Load() {
		return nil
	}
	dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
	err := b.fs.MkdirAll(dir)
	if err == nil {
		err = meta.WriteDescriptor(b.fs, dir, partitionDescriptor(p), true)
	}
	if err != nil {
		if rerr := b.fs.RemoveAll(dir); rerr != nil {
			b.log.Warn().Err(rerr).Str("dir", dir).Msg("create partition: removing the directory of a failed creation (the next start removes it)")
		}
		return b.noSpace(fmt.Sprintf("queue %s partition %s: its directory", p.q.name, p.name),
			fmt.Errorf("broker: queue %s partition %s (%s): make its directory: %w", p.q.name, p.name, p.idStr, err))
	}
	p.dirPending.Store(false)
	b.noteDir(dir)
	return nil
}

// creation is what createPartitionsLocked makes: new queues by name, new
// partitions in first-appearance order, and their metadata records.
type creation struct {
	queues map[string]*queue
	order  []*newPart
	recs   []meta.Record
}

// newPart is a partition being created and the indexes of the keys naming it.
type newPart struct {
	p    *partition
	idxs []int
}

// planCreation fills out with the partitions that exist (looked up under the
// shared registry lock) and plans the rest: a queue missing from the
// registry gets labels from its name and default options (spec 1.3); each
// missing (queue, partition) gets one new id however many keys name it.
func (b *Broker) planCreation(keys []partKey, out []*partition, nowMicros int64) *creation {
	c := &creation{queues: make(map[string]*queue)}
	byKey := make(map[partKey]*newPart)
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i, k := range keys {
		if out[i] != nil {
			continue
		}
		q := b.queues[k.queue]
		if q == nil {
			q = c.queues[k.queue]
		}
		if q == nil {
			ns, task := labelsFromName(k.queue)
			q = b.newQueue(newV7(), k.queue, nowMicros, queueConf{namespace: ns, task: task, opts: DefaultQueueOptions()})
			c.queues[k.queue] = q
			c.recs = append(c.recs, meta.Record{Kind: meta.KindQueuePut, ID: q.id, CreatedAt: nowMicros, Name: k.queue, Namespace: ns, Task: task, Opts: DefaultQueueOptions()})
		}
		if p := q.partition(k.partition); p != nil {
			out[i] = p
			continue
		}
		np := byKey[k]
		if np == nil {
			id := newV7()
			np = &newPart{p: &partition{id: id, idStr: uuidString(id), name: k.partition, q: q, createdAt: nowMicros}}
			byKey[k] = np
			c.order = append(c.order, np)
			c.recs = append(c.recs, meta.Record{Kind: meta.KindPartitionCreate, ID: id, QueueID: q.id, CreatedAt: nowMicros, Name: k.partition})
		}
		np.idxs = append(np.idxs, i)
	}
	return c
}

// registerCreation adds c's queues and partitions to the registry and fills
// out with them.
func (b *Broker) registerCreation(c *creation, out []*partition) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, q := range c.queues {
		b.queues[name] = q
	}
	for _, np := range c.order {
		b.addPartitionLocked(np.p)
		for _, i := range np.idxs {
			out[i] = np.p
		}
	}
}

// makePartitionDirs gives each new partition its directory, DESCRIPTOR and
// log (segment.Create: a mkdir and a stat; the segment file comes with the
// first append), without a sync: flushDirs makes them durable later, and the
// commit log covers them until then. On error nothing is left behind.
func (b *Broker) makePartitionDirs(parts []*partition) error {
	errs := make([]error, len(parts))
	// One at a time: mkdir and creat in one parent serialise on its inode
	// lock, and 16 creators spinning on it cost 5x the CPU of one (a
	// creation batch at 100,000 partitions, issue 14).
	for i := range parts {
		p := parts[i]
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		l, err := segment.Create(dir, b.segOpts)
		if err == nil {
			p.log = l
			p.visible.Store(l.NextOffset())
			err = meta.WriteDescriptor(b.partFS(), dir, partitionDescriptor(p), true)
		}
		if err != nil {
			errs[i] = fmt.Errorf("broker: queue %s partition %s (%s): %w", p.q.name, p.name, p.idStr, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		b.discardPartitionDirs(parts)
		return err
	}
	for _, p := range parts {
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		if b.small != nil && b.small.IsVirtual(dir) {
			continue // no inode to sync: the commit log's entry is its existence (small.go)
		}
		b.noteDir(dir)
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
		if err := b.partFS().RemoveAll(dir); err != nil {
			b.log.Warn().Err(err).Str("dir", dir).Msg("create partition: removing the directory of a failed creation (the next start removes it)")
		}
	}
}
