package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
)

// The flush pass (issue 14): the commit log holds everything acknowledged;
// the partition and DLQ files, the metadata journal and the cursor snapshots
// are materialized from it and synced here, in the background, after which
// the log is truncated behind what they cover. One pass:
//
//  1. L = the commit log's durable LSN. Every push or DLQ entry up to L was
//     written to its file before it was appended to the log.
//  2. The next offset of every log is noted, then every log marked since the
//     last pass is fdatasynced (segment.Committer.Flush), with the
//     directories and descriptors of partitions made since (flushDirs):
//     each file by an fdatasync or fsync of its own descriptor, a few at a
//     time, never by trusting syncfs(2) unless Config.FlushSyncFS says the
//     file system implements it (issue 21). Before each of its syncs the
//     pass waits for the commit log's batch in flight, at most flushYieldMax
//     (flushYield): a push's group commit then queues behind about one of
//     the pass's syncs on the device, not a dozen (issue 23).
//  3. meta/summaries is rewritten: for every log, the offset up to which its
//     file is durable (the noted next offset, or less where a sync did not
//     cover it: segment.Log.DurableNext), what recovery keeps without the
//     commit log, with a stamp when nothing was appended since (start-up
//     then skips the file).
//  4. A metadata snapshot (meta/journal) covering L, when metadata changed.
//  5. The streams registry file covering L and the snapshots of the shards
//     changed since the last pass (stream_store.go).
//  6. A cursor snapshot (cursor.Engine.Snapshot), which says from which LSN
//     its checkpoints must be replayed.
//  7. The log is truncated before min(L+1, that LSN, the first transaction
//     whose effects are not applied yet, the oldest stream state change no
//     snapshot holds).
//
// A failure at any step leaves the log as it is (nothing truncated): the
// next pass tries again, and a crash recovers from the log.

// Flush pass triggers (Config.FlushInterval, Config.FlushBytes).
const (
	DefaultFlushInterval = 10 * time.Second
	DefaultFlushBytes    = 256 << 20
)

// flushYieldMax bounds how long the flush pass waits for the commit log's
// batch in flight before one of its own syncs (flushYield): a batch's write
// and fdatasync take ~0.5-3 ms on the project machine, so a pass under
// continuous load is slowed by at most this per file, never starved.
const flushYieldMax = 2 * time.Millisecond

// flushYield is the flush pass's hook for segment.Committer.SetYield: wait
// for the local commit log's batch in flight (commitlog.Log.AwaitSync), at
// most flushYieldMax, so that every push's fdatasync queues behind about one
// of the pass's on the device (issue 23: a push's p99 during a pass over 200
// dirty partitions fell from 6.7-8.8 to 3.1 ms with 16 callers,
// docs/benchmarks.md "Flush pass yielding to the commit log"). nil for a
// replicated node, whose raft log syncs on a schedule the pass does not
// see, and under --sync interval or never, where no answer waits on a sync.
func (b *Broker) flushYield() func() {
	l, ok := b.wal.(localLog)
	if !ok || b.syncMode != commitlog.SyncAlways {
		return nil
	}
	return func() { l.l.AwaitSync(flushYieldMax) }
}

// flushState is the flush pass's bookkeeping.
type flushState struct {
	mu sync.Mutex // one pass at a time

	stateMu   sync.Mutex
	newDirs   []string       // partition and DLQ directories made since the last pass (with a DESCRIPTOR)
	inflight  map[uint64]int // LSNs of committed transactions not applied yet (count per LSN)
	lastLSN   uint64         // L of the last pass that truncated
	metaLSN   uint64         // Covers of the metadata snapshot on disk (under mu)
	metaDirty bool           // metadata changed since that snapshot (under metaMu)
	err       error          // the last pass's failure, nil once one succeeded
	passes    uint64         // passes run since open (View.FlushStatus, view.go)
	lastEnd   int64          // when the last pass ended (µs)
	lastDur   int64          // how long it took (µs)

	// leftInflight (under stateMu) is closed when an LSN leaves inflight
	// and made anew by the next waiter: waitInflightThrough waits on it
	// instead of polling.
	leftInflight chan struct{}

	stop, done chan struct{}
}

// noteDir remembers a directory made without syncs: the next pass makes it
// (and its DESCRIPTOR) durable.
func (b *Broker) noteDir(dir string) {
	b.flush.stateMu.Lock()
	b.flush.newDirs = append(b.flush.newDirs, dir)
	b.flush.stateMu.Unlock()
}

// appendInflight appends an entry that is in flight from its append on,
// under the lock the flush pass reads the in-flight set with: no pass can
// truncate it between the append and the inflight count (as logNote does).
func (b *Broker) appendInflight(kind byte, payload []byte) (walTicket, error) {
	b.flush.stateMu.Lock()
	defer b.flush.stateMu.Unlock()
	tk, err := b.wal.Append(kind, payload)
	if err != nil {
		return walTicket{}, err
	}
	if b.flush.inflight == nil {
		b.flush.inflight = map[uint64]int{}
	}
	b.flush.inflight[uint64(tk.LSN)]++
	return tk, nil
}

func (b *Broker) txApplied(lsn uint64) {
	b.flush.stateMu.Lock()
	if b.flush.inflight[lsn]--; b.flush.inflight[lsn] <= 0 {
		delete(b.flush.inflight, lsn)
		if b.flush.leftInflight != nil {
			close(b.flush.leftInflight)
			b.flush.leftInflight = nil
		}
	}
	b.flush.stateMu.Unlock()
}

// startFlusher runs flush passes in the background: every FlushInterval, or
// sooner once the commit log has grown by FlushBytes since the last one.
func (b *Broker) startFlusher() {
	b.flush.stop, b.flush.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.flush.done)
		tick := time.NewTicker(min(b.cfg.FlushInterval, time.Second))
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-b.flush.stop:
				return
			case <-tick.C:
			}
			grown := b.wal.RetainedBytes() >= b.cfg.FlushBytes
			if !grown && time.Since(last) < b.cfg.FlushInterval {
				continue
			}
			last = time.Now()
			if err := b.flushPass(); err != nil {
				b.log.Warn().Err(err).Msg("flush pass failed; the commit log keeps everything until one succeeds")
			}
		}
	}()
}

func (b *Broker) stopFlusher() {
	if b.flush.stop != nil {
		close(b.flush.stop)
		<-b.flush.done
		b.flush.stop = nil
	}
}

// flushPass runs one pass (see the top of this file). Safe to call
// concurrently (one runs at a time).
func (b *Broker) flushPass() error {
	b.flush.mu.Lock()
	defer b.flush.mu.Unlock()
	start := time.Now()
	err := b.flushPassLocked()
	end := time.Now()
	b.flush.stateMu.Lock()
	b.flush.err = err
	b.flush.passes++
	b.flush.lastEnd, b.flush.lastDur = end.UnixMicro(), end.Sub(start).Microseconds()
	b.flush.stateMu.Unlock()
	return err
}

// flushPassLocked is the pass itself; the caller holds b.flush.mu.
func (b *Broker) flushPassLocked() error {
	if b.isStale() {
		return ErrStale
	}
	L := b.wal.DurableLSN()
	parts := b.partitionList(nil)
	nexts := make([]uint64, len(parts))
	for i, p := range parts {
		nexts[i] = b.committedNext(p, b.appendedNext(p))
	}
	queues := b.sortedQueues()
	dlqNexts := make([]uint64, len(queues))
	for i, q := range queues {
		dlqNexts[i] = b.committedDLQNext(q, b.dlqNext(q))
	}
	if err := b.committer.Flush(); err != nil {
		return fmt.Errorf("flush: sync logs: %w", err)
	}
	for i, p := range parts {
		// A push publishes its offsets (NextOffset) before it marks the
		// log: one read above whose mark this Flush missed was not synced,
		// and the summaries must not say it was (issue 21: a later start
		// would find the file shorter than its synced length, damage).
		nexts[i] = min(nexts[i], p.log.DurableNext())
	}
	if err := b.homeSmall(parts, nexts); err != nil {
		return fmt.Errorf("flush: small partitions: %w", err)
	}
	if err := b.flushDirs(); err != nil {
		return fmt.Errorf("flush: sync directories: %w", err)
	}
	if err := b.writeSyncedSummaries(parts, nexts, queues, dlqNexts); err != nil {
		return fmt.Errorf("flush: summaries: %w", err)
	}
	if err := b.snapshotMeta(L); err != nil {
		return fmt.Errorf("flush: metadata snapshot: %w", err)
	}
	if err := b.flushStreams(L); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	replayFrom, err := b.snapshotCursors(L)
	if err != nil {
		return fmt.Errorf("flush: cursor snapshot: %w", err)
	}
	T := min(L+1, replayFrom)
	b.flush.stateMu.Lock()
	for lsn := range b.flush.inflight {
		T = min(T, lsn)
	}
	b.flush.stateMu.Unlock()
	// Read after the in-flight set: a cycle's change reaches the store's
	// dirty set before its entry leaves that set.
	if m := b.streams.store.MinDirtyLSN(); m > 0 {
		T = min(T, m)
	}
	// Every Note entry below T was applied to the notes file before it left
	// inflight (logNote): make them durable there before the log drops them.
	if err := b.syncNotes(); err != nil {
		return fmt.Errorf("flush: notes: %w", err)
	}
	if err := b.wal.TruncateBefore(T); err != nil {
		return fmt.Errorf("flush: truncate the commit log: %w", err)
	}
	b.flush.lastLSN = L
	b.wroteOK()
	return nil
}

// appendedNext is p's next offset, read under the partition lock on a
// single node: an append that takes its segment back (a full commit log,
// appendLogged) does so before it lets the lock go, so a flush pass never
// records as durable a segment that is about to leave the file. A
// replicated node reads it without the lock: committedNext caps it at what
// the cluster committed, which a segment taken back never reached, and its
// pass runs on raft's snapshot path, which must not wait behind a push
// waiting for raft.
func (b *Broker) appendedNext(p *partition) uint64 {
	if b.cfg.Replicated != nil {
		return p.log.NextOffset()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.NextOffset()
}

// flushDirs makes the directories made since the last pass durable: each
// one's DESCRIPTOR (fsync of its own) and entries, then their parents once
// each, startupWorkers at a time; or one syncfs with Config.FlushSyncFS.
func (b *Broker) flushDirs() error {
	b.flush.stateMu.Lock()
	dirs := b.flush.newDirs
	b.flush.newDirs = nil
	b.flush.stateMu.Unlock()
	if len(dirs) == 0 || b.noSync() {
		return nil
	}
	if b.cfg.FlushSyncFS && len(dirs) >= dirsSyncFSMin && b.oneDevice(dirs) {
		// One syncfs makes every DESCRIPTOR and directory entry durable:
		// two fsyncs per new directory cost ~0.5 ms of CPU each pass at
		// 100,000 partitions being created (issue 14). Only where syncfs
		// is known to sync (Config.FlushSyncFS, checked at Open): on a
		// file system without sync_fs it returns 0 and syncs nothing.
		if err := b.fs.SyncFS(b.dir); err != nil {
			b.requeueDirs(dirs)
			return fmt.Errorf("broker: sync new directories: %w", err)
		}
		return nil
	}
	errs := make([]error, len(dirs))
	parallelFor(len(dirs), func(i int) {
		errs[i] = meta.SyncDescriptor(b.fs, dirs[i])
		if errors.Is(errs[i], fs.ErrNotExist) {
			// Its queue was deleted since (RemoveAll): nothing left to make
			// durable, and keeping it would fail every later pass.
			errs[i] = nil
		}
	})
	parents := map[string]bool{}
	for _, d := range dirs {
		parents[filepath.Dir(d)] = true
	}
	for p := range parents {
		if err := b.fs.SyncDir(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		b.requeueDirs(dirs)
		return err
	}
	return nil
}

// requeueDirs puts back directories a failed pass did not make durable,
// ahead of those made since, for the next pass.
func (b *Broker) requeueDirs(dirs []string) {
	b.flush.stateMu.Lock()
	b.flush.newDirs = append(dirs, b.flush.newDirs...)
	b.flush.stateMu.Unlock()
}

// dirsSyncFSMin is the number of new directories from which a flush pass
// with Config.FlushSyncFS makes them durable with one syncfs instead of two
// fsyncs each (as segment's Committer does for logs).
const dirsSyncFSMin = 8

// oneDevice reports whether every parent of dirs is on the data
// directory's file system, which one SyncFS(b.dir) covers.
func (b *Broker) oneDevice(dirs []string) bool {
	dev, err := b.fs.Device(b.dir)
	if err != nil {
		return false
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		p := filepath.Dir(d)
		if seen[p] {
			continue
		}
		seen[p] = true
		if pd, err := b.fs.Device(p); err != nil || pd != dev {
			return false
		}
	}
	return true
}

// writeSyncedSummaries rewrites meta/summaries with, for every partition and
// DLQ log, the next offset its file is durable up to (noted before the
// sync), stamped when nothing was appended since so that start-up can skip
// the file.
func (b *Broker) writeSyncedSummaries(parts []*partition, nexts []uint64, queues []*queue, dlqNexts []uint64) error {
	sums := make(map[[16]byte]segment.Summary, len(parts)+len(queues))
	for i, p := range parts {
		if p.isDamaged() {
			// What was synced stays recorded: the next start must find the
			// damage again, not cut it as a torn tail.
			if s, ok := damagedSummary(p); ok {
				sums[p.id] = s
			}
			continue
		}
		s, ok := b.partitionSummary(p)
		if !ok || s.NextOffset != nexts[i] {
			s = segment.Summary{FirstOffset: min(p.log.FirstOffset(), nexts[i]), NextOffset: nexts[i]}
		}
		p.sum = s
		sums[p.id] = s
	}
	for i, q := range queues {
		if dlqNexts[i] > 0 {
			sums[q.id] = segment.Summary{FirstOffset: 1, NextOffset: dlqNexts[i]}
		}
	}
	return b.writeSummaryFile(summariesFileName, sums)
}

// dlqNext is the next offset of q's DLQ log (0 = it has none).
func (b *Broker) dlqNext(q *queue) uint64 {
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	if q.dlq == nil {
		return 0
	}
	return q.dlq.NextOffset()
}

// snapshotMeta rewrites meta/journal as a snapshot of the registry covering
// LSN L, when metadata changed since the last one. Metadata changes append
// their entry and apply it under metaMu, so the records taken under it hold
// every entry up to L. The write, its fsyncs and the rename run after metaMu
// is let go: a creation, which takes metaMu, waits for its own commit-log
// entry, never for this file. A change made meanwhile marks the metadata
// dirty again for the next pass (or the failure of this write does).
//
// The caller holds flush.mu, so snapshots are written one at a time, in the
// order of their L: an older one never replaces a newer one. What relies on
// this one being durable, the pass's truncation of the commit log before
// L+1, runs after it returned nil (flushPassLocked).
func (b *Broker) snapshotMeta(L uint64) error {
	b.metaMu.Lock()
	if !b.flush.metaDirty {
		b.metaMu.Unlock()
		return nil
	}
	st := b.registryState()
	st.Covers = L
	recs := st.Records()
	b.flush.metaDirty = false
	b.metaMu.Unlock()
	if err := meta.WriteJournal(b.fs, filepath.Join(b.dir, layout.Meta), recs, b.noSync()); err != nil {
		b.metaMu.Lock()
		b.flush.metaDirty = true
		b.metaMu.Unlock()
		return err
	}
	b.flush.metaLSN = L
	return nil
}

// snapshotCursors writes the cursor snapshot and returns its replay point.
// A node following a replicated log appends no checkpoint of its own: every
// checkpoint up to L (its applied LSN, read before) is in memory, so the
// snapshot replays from L+1.
func (b *Broker) snapshotCursors(L uint64) (uint64, error) {
	if b.cfg.Replicated != nil && !b.cfg.Replicated.Leading() {
		if b.isStale() {
			// Its engine may hold claims and acks that never committed.
			return 0, ErrStale
		}
		return L + 1, b.cur.SnapshotAt(L + 1)
	}
	return b.cur.Snapshot()
}
