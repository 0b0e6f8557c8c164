package broker

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/recovery"
	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/broker/wake"
	"github.com/combmq/comb/clock"
	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/vfs"
)

// Open opens (creating if missing) the data directory cfg.DataDir, takes its
// LOCK, replays the metadata journal, opens every partition's segment log and
// the cursor engine, and repairs what a crash left behind: torn tails (in each
// package), cursors past a partition's high-water mark, leases over lost
// messages, and transactions whose redo record is durable but whose pushes
// are missing (see open_recover.go). Everything repaired is logged.
//
// Errors: ErrLocked when another process holds the directory; otherwise I/O
// or corruption errors from the packages below, wrapped with the path.
func Open(cfg Config) (*Broker, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("broker: Config.DataDir is required")
	}
	policy, err := commitlog.ParseSyncPolicy(cfg.Sync)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	if err := fsys.MkdirAll(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	lock, err := fsys.Lock(filepath.Join(cfg.DataDir, layout.Lock))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%s: %w (is another comb serving it?)", cfg.DataDir, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := checkDurability(fsys, cfg, policy); err != nil {
		_ = lock.Close()
		return nil, err
	}
	b := &Broker{
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Now,
		waits:    cmp.Or(cfg.Clock, clock.System),
		dir:      cfg.DataDir,
		syncMode: policy,
		// Rotation syncs nothing (DeferRotationSync): the commit log covers
		// a new file's predecessor until the flush pass syncs both, and
		// recovery cuts what no sync covered (segment.OpenFrom).
		segOpts: segment.Options{MaxFileBytes: cfg.MaxSegmentFileSize, MaxFileAge: cfg.MaxSegmentFileAge, Codec: segment.DefaultCodec,
			QuarantineDir: filepath.Join(cfg.DataDir, layout.Quarantine, layout.Partitions), DeferRotationSync: true},
		lockFile: lock,
		fs:       fsys,
		queues:   make(map[string]*queue),
		parts:    make(map[[16]byte]*partition),
		closing:  make(chan struct{}),
		anyGate:  wake.NewGate(),
	}
	b.segOpts.FS = b.fs
	b.segOpts.OnRecover = b.logSegmentRecovery
	if cfg.MaxOpenFiles > 0 {
		b.handles = segment.NewHandleCache(b.fileBudget(cfg.MaxOpenFiles))
		b.segOpts.Handles = b.handles
	}
	b.openSeries()
	if err := b.open(); err != nil {
		b.closeFiles()
		return nil, err
	}
	if err := b.loadMaintMode(); err != nil {
		b.closeFiles()
		return nil, err
	}
	b.pruneNotes()
	b.wake = wake.NewWaker(cfg.WakeTick)
	b.initScale()
	b.series.DropUnclaimed()
	b.startMaintenance()
	b.startFlusher()
	b.warnEncryptionWithoutKey()
	return b, nil
}

// open recovers the data directory (docs/architecture.md, "Recovery"):
//
//  1. the metadata snapshot (meta/journal, its torn tail cut) and the cursor
//     engine's newest snapshot;
//  2. the commit log (its torn tail zeroed), numbering on from what both
//     snapshots cover even if its directory was lost;
//  3. a first read of the commit log: metadata entries after the snapshot
//     are applied, and every log's first retained base is noted (walScan);
//  4. the registry and every partition log, each cut to what is durable
//     (openPartitionLog), then the start-up rule for stray directories;
//  5. a second read, in LSN order: segments appended where their base is the
//     log's next offset, checkpoints from the cursor snapshot's replay point
//     applied, committed transactions finished (idempotently);
//  6. the cursor engine started, legacy redo records replayed, cursors
//     clamped (open_recover.go), and one flush pass, after which everything is
//     durable outside the commit log and it is truncated.
func (b *Broker) open() error {
	st, err := b.openMeta()
	if err != nil {
		return err
	}
	cur, crep, err := cursor.Open(filepath.Join(b.dir, layout.Cursor), cursor.Options{
		FS:                 b.fs,
		CheckpointInterval: b.cfg.CheckpointInterval,
		NoSync:             b.noSync(),
		Log:                cursorLog{b},
		Now:                b.now, // checkpoints carry it; a follower rebases leases on it (issue 22)
	})
	if err != nil {
		return fmt.Errorf("broker: cursor engine: %w", err)
	}
	b.cur = cur
	if err := b.loadStreams(); err != nil {
		return err
	}
	if err := b.openCommitLog(max(st.Covers+1, crep.ReplayFrom, b.streams.loaded.MaxLSN()+1)); err != nil {
		return err
	}
	if b.summaries, err = b.takeCleanMarker(); err != nil {
		return err
	}
	if st, err = b.scanCommitLog(st); err != nil {
		return err
	}
	if err := b.ensurePartitionsDir(); err != nil {
		return err
	}
	if err := b.openSmall(); err != nil {
		return err
	}
	err = b.applyMeta(st)
	b.adoptSummaries()
	if err != nil {
		return err
	}
	b.describeCreated()
	b.committer = segment.NewCommitter()
	b.committer.SetSyncFS(b.cfg.FlushSyncFS)
	b.committer.SetYield(b.flushYield())
	err = b.openDLQsForReplay()
	b.summaries = nil
	if err != nil {
		return err
	}
	if err := b.openNotes(); err != nil { // before the replay: it replays Note entries
		return err
	}
	if err := b.restoreStreams(); err != nil { // before the replay: it replays state changes
		return err
	}
	if err := b.replayCommitLog(crep.ReplayFrom); err != nil {
		return err
	}
	b.walScan = walScan{}
	b.streams.loaded = streams.Loaded{}
	cur.Start()
	if err := b.recover(crep.LegacyRecords); err != nil {
		return err
	}
	if err := b.describeAll(st); err != nil {
		return err
	}
	if b.cfg.Replicated != nil {
		b.markAllCommitted()
		// Links a crash left while a snapshot streamed would pin files
		// retention removed.
		if err := os.RemoveAll(filepath.Join(b.dir, snapshotOutgoing)); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	if err := b.flushPass(); err != nil {
		return fmt.Errorf("broker: recovery flush: %w", err)
	}
	if len(crep.LegacyRecords) > 0 {
		// The flush pass made the legacy records' effects durable (segments
		// synced, cursors snapshotted): the next snapshot may drop them, so
		// an upgraded directory stops handing them out at every start.
		cur.ForgetLegacyRecords()
	}
	return nil
}

// openCommitLog opens <data>/commitlog with the broker's sync policy; an
// empty log numbers from start.
func (b *Broker) openCommitLog(start uint64) error {
	if b.cfg.Replicated != nil {
		b.cfg.Replicated.NumberFrom(start)
		b.wal = replicatedLog{b.cfg.Replicated, &b.commitHist}
		return nil
	}
	l, rec, err := commitlog.Open(filepath.Join(b.dir, layout.CommitLog), commitlog.Options{
		FS: b.fs, Sync: b.syncMode, SyncInterval: b.cfg.SyncInterval, FileBytes: b.cfg.CommitLogFileBytes,
		QuarantineDir: filepath.Join(b.dir, layout.Quarantine, layout.CommitLog), StartLSN: commitlog.LSN(start),
		// The commit log's group-commit syncs are the ones a push waits on:
		// they go to the sync histogram, so /metrics and `comb bench
		// compare` count syncs per request.
		OnSync:          b.syncHist.observe,
		GroupCommitWait: max(b.cfg.GroupCommitWait, 0),
		Urgent:          b.consumerFacing,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.wal = localLog{l}
	if rec.Repaired() {
		b.log.Warn().Str("file", rec.CutFile).Int64("at", rec.CutAt).Int64("bytes", rec.CutBytes).Str("keptAt", rec.KeptAt).
			Str("tail", rec.Tail.String()).Msg("commit log: zeroed a torn batch (its fdatasync never returned: never acknowledged); its bytes are kept")
	}
	return nil
}

// walScan is what the first read of the commit log found.
type walScan struct {
	bases   map[[16]byte]uint64 // base offset of the first retained segment, by partition or DLQ queue id
	created map[[16]byte]bool   // partitions created by a retained entry (after the metadata snapshot)
	// rule is what the keep rule is asked (package recovery): the
	// summaries' synced ends with bases and created, the same facts fsck
	// reads.
	rule recovery.Start
}

// scanCommitLog applies the metadata entries after st's snapshot and notes
// every log's first retained base (walScan), and returns the state.
func (b *Broker) scanCommitLog(st *meta.State) (*meta.State, error) {
	b.walScan = walScan{bases: map[[16]byte]uint64{}, created: map[[16]byte]bool{}}
	var later []meta.Record
	err := b.wal.Read(b.wal.FirstLSN(), func(lsn uint64, kind byte, payload []byte) error {
		switch kind {
		case walMeta:
			if lsn <= st.Covers {
				return nil
			}
			recs, err := decodeMetaEntry(payload)
			if err != nil {
				return fmt.Errorf("commit log entry %d: %w", lsn, err)
			}
			for _, r := range recs {
				if r.Kind == meta.KindPartitionCreate {
					b.walScan.created[r.ID] = true
				}
			}
			later = append(later, recs...)
		case walPush, walDLQ:
			id, seg, err := walentry.SplitLog(payload)
			if err != nil {
				return fmt.Errorf("commit log entry %d: %w", lsn, err)
			}
			base, _, _, err := segment.PeekSegment(seg)
			if err != nil {
				return fmt.Errorf("commit log entry %d: %w", lsn, err)
			}
			if _, ok := b.walScan.bases[id]; !ok {
				b.walScan.bases[id] = base
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("broker: commit log: %w", err)
	}
	b.walScan.rule = recovery.Start{ReplayBase: b.walScan.bases, Created: b.walScan.created, Replicated: b.cfg.Replicated != nil}
	if b.summaries != nil {
		b.walScan.rule.SyncedNext = make(map[[16]byte]uint64, len(b.summaries))
		for id, s := range b.summaries {
			b.walScan.rule.SyncedNext[id] = s.NextOffset
		}
	}
	if len(later) == 0 {
		return st, nil
	}
	// The registry now holds entries no snapshot has: the recovery flush
	// must write one before it truncates them away.
	b.flush.metaDirty = true
	return meta.Apply(append(st.Records(), later...)), nil
}

// openDLQsForReplay opens, before the replay, every DLQ log there is, each
// cut to what is durable (as partitions).
//
// A DLQ directory that neither the summaries nor the commit log know of
// holds nothing that was ever acknowledged, and is cut to nothing (its bytes
// copied to quarantine): recovery.Start.Facts says why.
func (b *Broker) openDLQsForReplay() error {
	for _, q := range b.queues {
		_, hasSum := b.summaries[q.id]
		_, hasBase := b.walScan.bases[q.id]
		create := hasSum || hasBase
		q.dlqMu.Lock()
		_, err := b.dlqLogLocked(q, create)
		q.dlqMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// replayCommitLog is the second read (see open): in LSN order.
func (b *Broker) replayCommitLog(replayFrom uint64) error {
	var n, appended int
	err := b.wal.Read(b.wal.FirstLSN(), func(lsn uint64, kind byte, payload []byte) error {
		n++
		ok, err := b.replayEntry(lsn, kind, payload, replayFrom, b.cur.ApplyCheckpoint)
		if ok {
			appended++
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("broker: commit log replay: %w", err)
	}
	for _, p := range b.parts {
		p.visible.Store(p.log.NextOffset())
	}
	if n > 0 {
		b.log.Info().Int("entries", n).Int("segmentsAppended", appended).Msg("start-up: replayed the commit log")
	}
	return nil
}

// replayEntry applies one commit-log entry other than Meta (scanCommitLog
// applies those) where the files do not hold it yet, for the start-up replay
// and for a follower's committed entries (ApplyReplicated). Checkpoints at or
// after replayFrom go to applyCkpt. It reports whether a Push entry's segment
// was appended.
func (b *Broker) replayEntry(lsn uint64, kind byte, payload []byte, replayFrom uint64, applyCkpt func([]byte) error) (bool, error) {
	switch kind {
	case walPush:
		id, seg, _ := walentry.SplitLog(payload)
		p := b.lookupPartitionByID(id)
		if p == nil || p.isDamaged() {
			return false, nil // its queue was deleted since, or the log is out of service
		}
		p.mu.Lock()
		ok, err := b.replaySegment(p.log, seg)
		p.mu.Unlock()
		if err != nil {
			b.markDamaged(p, err)
			return false, nil
		}
		return ok, nil
	case walDLQ:
		id, seg, _ := walentry.SplitLog(payload)
		q := b.queueByID(id)
		if q == nil {
			return false, nil
		}
		q.dlqMu.Lock()
		l, err := b.dlqLogLocked(q, true)
		if err == nil {
			_, err = b.replaySegment(l, seg)
		}
		q.dlqMu.Unlock()
		if err != nil {
			return false, fmt.Errorf("queue %s dlq: %w", q.name, err)
		}
	case walCheckpoint:
		if lsn >= replayFrom {
			if err := applyCkpt(payload); err != nil {
				return false, fmt.Errorf("commit log entry %d: %w", lsn, err)
			}
		}
	case walNote:
		if err := b.replayNote(lsn, payload); err != nil {
			return false, err
		}
	case walTx:
		rec, err := walentry.DecodeTx(payload)
		if err != nil {
			return false, fmt.Errorf("commit log entry %d: %w", lsn, err)
		}
		if err := b.replayTx(&rec); err != nil {
			return false, err
		}
		b.replayStreamChanges(lsn, &rec)
	case walStream:
		if err := b.replayStreamEntry(lsn, payload); err != nil {
			return false, err
		}
	}
	return false, nil
}

// replaySegment appends seg to l when its base is l's next offset (it was
// lost with the unsynced tail), skips it when l already has it, and reports
// damage when l ends before it (a synced segment is missing).
func (b *Broker) replaySegment(l *segment.Log, seg []byte) (bool, error) {
	base, count, _, err := segment.PeekSegment(seg)
	if err != nil {
		return false, err
	}
	next := l.NextOffset()
	switch {
	case base+uint64(count) <= next:
		return false, nil
	case base == next:
		if _, err := l.AppendSegment(seg); err != nil {
			return false, err
		}
		b.committer.Mark(l)
		return true, nil
	}
	return false, &segment.CorruptionError{File: l.Dir(), FirstOffset: next, LastOffset: base - 1,
		Reason: fmt.Sprintf("the log ends at offset %d but the commit log continues at %d: offsets %d-%d are missing", next-1, base, next, base-1)}
}

// describeCreated gives every partition a retained commit-log entry created
// its DESCRIPTOR again when a crash lost it (it was written without a sync);
// the recovery flush makes it durable.
func (b *Broker) describeCreated() {
	for id := range b.walScan.created {
		p := b.parts[id]
		if p == nil {
			continue
		}
		dir := filepath.Join(b.dir, meta.PartitionsDir, p.idStr)
		fsys := b.partFS() // a small partition's DESCRIPTOR is in memory (small.go)
		if _, err := meta.ReadDescriptor(fsys, dir); err == nil {
			continue
		}
		if err := meta.WriteDescriptor(fsys, dir, partitionDescriptor(p), true); err != nil {
			b.log.Warn().Err(err).Str("dir", dir).Msg("start-up: could not write a lost DESCRIPTOR again")
			continue
		}
		if b.small == nil || !b.small.IsVirtual(dir) {
			b.noteDir(dir)
		}
	}
}

// consumerFacing names the commit-log entries that answer a consumer (a
// pop's or an ack's checkpoint, a dead-lettered message, a transaction or
// streams cycle, which acks) while the process has CPU to spare
// (cpuSaturation): the group-commit wait then never holds a batch holding
// one (commitlog.Options.Urgent) and trades only producers' latency for
// fewer syncs; short of CPU, a sync saved is worth a consumer's wait too.
func (b *Broker) consumerFacing(kind byte) bool {
	return (kind == walCheckpoint || kind == walDLQ || kind == walTx) && !b.cpuSat.saturated()
}
