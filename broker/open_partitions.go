package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
)

// logSegmentRecovery logs what a segment log repaired on its own outside the
// start-up scan (segment.Options.OnRecover: a torn tail cut at a lazy load, a
// dedup.idx rebuilt because it was damaged), and a DLQ log's recovery. Issue
// 10: the words say whether cut bytes can have been acknowledged data and
// where they were kept.
func (b *Broker) logSegmentRecovery(dir string, rep *segment.RecoveryReport) {
	ev := b.log.Warn().Str("dir", dir)
	if rep.TruncatedBytes > 0 {
		ev = ev.Str("file", rep.File).Int64("truncatedBytes", rep.TruncatedBytes).Int64("at", rep.TruncatedAt).
			Uint64("lostFirst", rep.LostFirstOffset).Uint64("lostLast", rep.LostLastOffset).
			Str("tail", rep.TailText()).Str("keptAt", rep.KeptAt)
	}
	if len(rep.IndexesRebuilt) > 0 {
		ev = ev.Strs("indexesRebuilt", rep.IndexesRebuilt)
	}
	if rep.DedupRebuilt != "" {
		ev = ev.Str("dedup", rep.DedupRebuilt)
	}
	ev.Msg("segment log repaired")
}

// applyMeta rebuilds the registry from the metadata state, opens the logs
// (each with what the commit log and the summaries say it may keep, open_startup.go)
// and applies the start-up rule to directories the metadata does not name.
func (b *Broker) applyMeta(st *meta.State) error {
	b.tombstones = make(map[[16]byte]bool, len(st.Deleted))
	for id := range st.Deleted {
		b.tombstones[id] = true
	}
	b.described = st.Described
	byID := make(map[[16]byte]*queue, len(st.Queues))
	for _, mq := range st.Queues {
		q := b.newQueue(mq.ID, mq.Name, mq.CreatedAt, queueConf{namespace: mq.Namespace, task: mq.Task, opts: mq.Opts})
		byID[q.id] = q
		b.queues[q.name] = q
	}
	// Open the logs concurrently: many partitions, each a directory scan.
	type opened struct {
		p   *partition
		rep *segment.RecoveryReport
		err error
	}
	results := make([]opened, len(st.Partitions))
	parallelFor(len(st.Partitions), func(i int) {
		mp := st.Partitions[i]
		p, rep, err := b.openPartition(byID[mp.QueueID], mp.ID, mp.Name, mp.CreatedAt)
		results[i] = opened{p, rep, err}
	})
	for _, o := range results {
		if o.err != nil {
			return o.err
		}
		if o.rep.Repaired() {
			b.log.Warn().Str("queue", o.p.q.name).Str("partition", o.p.name).Str("partitionId", o.p.idStr).
				Int64("truncatedBytes", o.rep.TruncatedBytes).Uint64("lostFirst", o.rep.LostFirstOffset).
				Uint64("lostLast", o.rep.LostLastOffset).Str("tail", o.rep.TailText()).Str("keptAt", o.rep.KeptAt).
				Strs("indexesRebuilt", o.rep.IndexesRebuilt).
				Msg("partition log repaired")
		}
		b.addPartitionLocked(o.p)
	}
	if err := b.dropUnregisteredSmall(); err != nil {
		return err
	}
	return b.checkStrayDirs(st)
}

func (b *Broker) openPartition(q *queue, id [16]byte, name string, createdAt int64) (*partition, *segment.RecoveryReport, error) {
	idStr := uuidString(id)
	dir := filepath.Join(b.dir, layout.Partitions, idStr)
	virtual, err := b.attachSmall(id, dir)
	if err != nil {
		return nil, nil, err
	}
	if !virtual && b.dirNeverMade(id, dir) {
		// Created while the disk was full and never appended to (issue 21):
		// its next push makes the directory with its DESCRIPTOR, as the
		// process that created it would have.
		p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: segment.OpenSummary(dir, b.segOpts, segment.Summary{})}
		p.visible.Store(p.log.NextOffset())
		p.dirPending.Store(true)
		return p, &segment.RecoveryReport{}, nil
	}
	l, rep, err := b.openPartitionLog(id, dir)
	var ce *segment.CorruptionError
	if errors.As(err, &ce) {
		// One damaged partition must not keep the server down: it is opened
		// out of service (damage.go) on a log that reads nothing until used,
		// and every path that would use it checks the mark first.
		p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: segment.OpenSummary(dir, b.segOpts, segment.Summary{})}
		p.visible.Store(p.log.NextOffset())
		p.sum = b.syncedSummary(id)
		b.markDamaged(p, err)
		return p, &segment.RecoveryReport{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("broker: queue %s partition %s (%s): %w", q.name, name, idStr, err)
	}
	p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: l}
	p.visible.Store(l.NextOffset())
	return p, rep, nil
}

// dirNeverMade reports whether partition id's directory does not exist and
// never held a record: no summary says it holds any, and no retained
// commit-log entry appends to or creates it (those make it again). Only
// such an empty partition is opened without a directory; one stat each.
func (b *Broker) dirNeverMade(id [16]byte, dir string) bool {
	if b.cfg.Replicated != nil {
		return false
	}
	if s, ok := b.summaries[id]; ok && s.NextOffset > 1 {
		return false
	}
	if _, ok := b.walScan.bases[id]; ok || b.walScan.created[id] {
		return false
	}
	ok, err := existsDir(b.fs, dir)
	return err == nil && !ok
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

// checkStrayDirs applies the start-up rule to every partition and DLQ
// directory the journal does not name (doc.go, docs/operations.md): a
// directory of a queue the journal deleted is removed (finishing the delete),
// one that holds no record is removed (a creation a crash interrupted before
// its journal record), and one that holds records makes Open refuse with
// ErrStrayData. Names that are not ids are left alone.
func (b *Broker) checkStrayDirs(st *meta.State) error {
	var stray []string
	for _, sub := range []string{meta.PartitionsDir, meta.DLQDir} {
		dir := filepath.Join(b.dir, sub)
		names, err := b.fs.List(dir)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return fmt.Errorf("broker: %w", err)
		}
		for _, name := range names {
			path := filepath.Join(dir, name)
			id, ok := meta.ParseID(name)
			if !ok {
				if !strings.HasSuffix(name, ".tmp") {
					b.log.Warn().Str("dir", path).Msg("start-up: not a partition id; left alone")
				}
				continue
			}
			// Names are matched by parsed id against the registry's maps:
			// no per-partition string at 100,000 partitions (issue 7).
			if sub == meta.PartitionsDir && b.parts[id] != nil || sub == meta.DLQDir && st.QueueByID[id] != nil {
				continue
			}
			has, err := b.holdsRecords(path)
			if err != nil {
				return fmt.Errorf("broker: %w", err)
			}
			switch {
			case has && b.cfg.Replicated != nil:
				// A creation after the metadata snapshot: raft applies it and
				// the pushes that followed again, and what the directory
				// holds past them may never have committed (follow_commit.go).
				b.log.Info().Str("dir", path).Msg("start-up: removing a directory the metadata snapshot does not name; the replicated log creates it again")
			case st.Deleted[id]:
				b.log.Warn().Str("dir", path).Msg("start-up: removing the data of a deleted queue (finishing its delete)")
			case !has:
				b.log.Info().Str("dir", path).Msg("start-up: removing a directory without records that the metadata does not name (a creation interrupted by a crash)")
			default:
				stray = append(stray, path)
				continue
			}
			if err := b.fs.RemoveAll(path); err != nil {
				return fmt.Errorf("broker: %w", err)
			}
		}
	}
	if len(stray) > 0 {
		return fmt.Errorf("%w: %d directories hold messages that meta/journal does not name (first: %s). "+
			"Was meta/journal lost, cut, or replaced by an older copy? Nothing was deleted. "+
			"Stop here and run `comb fsck --repair %s` to rebuild the journal from the data, then start again",
			ErrStrayData, len(stray), stray[0], b.dir)
	}
	return nil
}

// holdsRecords reports whether a log directory has a non-empty segment file.
func (b *Broker) holdsRecords(dir string) (bool, error) {
	names, err := b.fs.List(dir)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".seg") {
			continue
		}
		f, err := b.fs.OpenFile(filepath.Join(dir, n), os.O_RDONLY)
		if err != nil {
			return true, err
		}
		size, err := f.Size()
		f.Close()
		if err != nil || size > 0 {
			return true, err
		}
	}
	return false, nil
}
