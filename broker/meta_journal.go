package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/walentry"
)

// QueueOptions are a queue's options (package meta owns their encoding).
type QueueOptions = meta.QueueOptions

// DefaultQueueOptions are the options of an auto-created queue and of every
// option a configure request leaves out (spec 1.3, 2.2).
func DefaultQueueOptions() QueueOptions { return meta.DefaultQueueOptions() }

// ErrStrayData is wrapped by Open when a partition or DLQ directory holds
// records that the metadata journal does not name. Start-up never deletes
// such a directory (the journal may have been lost, cut or replaced by an
// older copy: its data is acknowledged messages); `comb fsck --repair`
// rebuilds the journal from the directories' descriptors.
var ErrStrayData = errors.New("broker: data the metadata journal does not name")

// openMeta opens the metadata journal (upgrading a version 1 journal and
// quarantining a torn or damaged tail, package meta) and returns the state it
// describes.
func (b *Broker) openMeta() (*meta.State, error) {
	j, rep, err := meta.OpenJournal(filepath.Join(b.dir, layout.Meta), meta.Options{
		FS: b.fs, NoSync: b.noSync(), QuarantineDir: filepath.Join(b.dir, layout.Quarantine, layout.Meta)})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	// The journal is only read here: metadata changes go to the commit log,
	// and the flush pass rewrites the journal as a snapshot (flush.go).
	if err := j.Close(); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	switch rep.Tail {
	case record.TailTorn:
		b.log.Warn().Int64("at", rep.CutAt).Int64("bytes", rep.CutBytes).Str("keptAt", rep.KeptAt).
			Msg("metadata journal: cut an incomplete last record (a torn write: never acknowledged); its bytes are kept")
	case record.TailDamaged:
		b.log.Error().Int64("at", rep.CutAt).Int64("bytes", rep.CutBytes).Str("keptAt", rep.KeptAt).
			Msg("metadata journal: the last record is whole but fails its checksum: a torn write, or damage to an acknowledged queue or partition change; cut, its bytes kept. If a partition is missing, stop and run comb fsck --repair")
	}
	if rep.UpgradedFrom != 0 {
		b.log.Info().Int("from", rep.UpgradedFrom).Msg("metadata journal: upgraded to the current format (the old file is kept as meta/journal.v1)")
	}
	return meta.Apply(rep.Records), nil
}

// describeAll upgrades a data directory made before descriptors: every live
// partition and DLQ directory without a DESCRIPTOR gets one, then the
// journal records that all have one (meta.KindDescribed), so later starts do
// not look again. A fresh directory costs one journal record.
func (b *Broker) describeAll(st *meta.State) error {
	if st.Described {
		return nil
	}
	if b.cfg.Replicated != nil {
		// A replicated node cannot append before it leads, and its data
		// directory was never a pre-descriptor one: there is nothing to
		// upgrade.
		b.described = true
		return nil
	}
	type job struct {
		dir string
		d   meta.Descriptor
	}
	var jobs []job
	for _, p := range b.parts {
		jobs = append(jobs, job{filepath.Join(b.dir, meta.PartitionsDir, p.idStr), partitionDescriptor(p)})
	}
	for _, q := range b.queues {
		jobs = append(jobs, job{filepath.Join(b.dir, meta.DLQDir, q.idStr), dlqDescriptor(q)})
	}
	errs := make([]error, len(jobs))
	parallelFor(len(jobs), func(i int) {
		j := jobs[i]
		if ok, err := existsDir(b.fs, j.dir); err != nil || !ok {
			errs[i] = err // a DLQ never used has no directory; a partition's is made lazily
			return
		}
		if _, err := meta.ReadDescriptor(b.fs, j.dir); err == nil {
			return
		}
		errs[i] = meta.WriteDescriptor(b.fs, j.dir, j.d, b.noSync())
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("broker: describe partition directories: %w", err)
	}
	if len(jobs) > 0 {
		b.log.Info().Int("directories", len(jobs)).Msg("start-up: every partition and DLQ directory now carries a DESCRIPTOR")
	}
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	t, err := b.logMetaLocked(meta.Record{Kind: meta.KindDescribed})
	if err == nil {
		err = t.Wait()
	}
	b.described = err == nil
	return err
}

// logMetaLocked appends recs to the commit log as one walMeta entry (all or
// nothing) and notes that the metadata changed; the caller holds metaMu and
// applies them to the registry before releasing it (so a metadata snapshot
// never misses an appended entry), and waits for the ticket when its answer
// promises durability.
//
// Errors: meta.ErrRecordTooLarge (nothing appended), or the commit log's.
func (b *Broker) logMetaLocked(recs ...meta.Record) (walTicket, error) {
	payload, err := walentry.EncodeMeta(recs...)
	if err != nil {
		return walTicket{}, err
	}
	t, err := b.wal.Append(walMeta, payload)
	if err != nil {
		return walTicket{}, fmt.Errorf("broker: commit log: %w", err)
	}
	b.flush.metaDirty = true
	return t, nil
}

// decodeMetaEntry decodes a walMeta payload.
func decodeMetaEntry(payload []byte) ([]meta.Record, error) { return walentry.DecodeMeta(payload) }

// registryState is the registry as a meta.State (the caller holds metaMu):
// what a metadata snapshot writes.
func (b *Broker) registryState() *meta.State {
	st := &meta.State{QueueByID: map[[16]byte]*meta.Queue{}, PartByID: map[[16]byte]*meta.Partition{}, Deleted: map[[16]byte]bool{}, Described: b.described}
	for id := range b.tombstones {
		st.Deleted[id] = true
	}
	for _, q := range b.sortedQueues() {
		c := q.conf.Load()
		mq := &meta.Queue{ID: q.id, Name: q.name, Namespace: c.namespace, Task: c.task, CreatedAt: q.createdAt, Opts: c.opts}
		st.Queues = append(st.Queues, mq)
		st.QueueByID[q.id] = mq
		for _, p := range q.partitionsSnapshot() {
			mp := &meta.Partition{ID: p.id, QueueID: q.id, Name: p.name, CreatedAt: p.createdAt}
			st.Partitions = append(st.Partitions, mp)
			st.PartByID[p.id] = mp
		}
	}
	return st
}

func partitionDescriptor(p *partition) meta.Descriptor {
	c := p.q.conf.Load()
	return meta.Descriptor{Kind: meta.DescribesPartition, QueueID: p.q.id, QueueCreatedAt: p.q.createdAt, Queue: p.q.name,
		Namespace: c.namespace, Task: c.task, PartitionID: p.id, PartitionCreated: p.createdAt, Partition: p.name}
}

func dlqDescriptor(q *queue) meta.Descriptor {
	c := q.conf.Load()
	return meta.Descriptor{Kind: meta.DescribesDLQ, QueueID: q.id, QueueCreatedAt: q.createdAt, Queue: q.name,
		Namespace: c.namespace, Task: c.task}
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// existsDir reports whether dir exists (as a directory listing succeeds).
func existsDir(fsys vfs.FS, dir string) (bool, error) {
	_, err := fsys.List(dir)
	switch {
	case err == nil:
		return true, nil
	case isNotExist(err):
		return false, nil
	}
	return false, err
}
