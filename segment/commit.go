package segment

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Committer makes many Logs durable on the caller's schedule: Mark notes a
// log with appends to sync, Flush syncs every marked log in one pass
// (flush.go). The broker runs the pass in the background and keeps what a
// crash may lose in its commit log (issue 14), so nothing here waits on an
// fsync per append.
//
// A pass fdatasyncs each log through its own descriptors, up to syncWorkers
// at a time, or (SetSyncFS) the logs of one file system with one syncfs(2)
// from syncFSMin of them on. With a yield hook (SetYield) it calls the hook
// before each fdatasync, fsync or syncfs it issues and keeps fewer in flight
// (yieldLogsPerWorker), so that another log's syncs on the same device (the
// broker's commit log, on which every acknowledgement waits) queue behind
// about one of the pass's, not a dozen (issue 23). What survives a crash is
// always a prefix of what was appended: recovery truncates a torn tail.
type Committer struct {
	mu     sync.Mutex
	marked map[*Log]struct{} // Mark's set, taken by Flush (flush.go)
	closed bool
	yield  func() // SetYield's hook, nil = none (under mu)

	workers int         // fdatasyncs in flight per pass (syncWorkers; benchmarks vary it)
	syncFS  atomic.Bool // SetSyncFS: one syncfs per file system from syncFSMin logs on
}

// syncWorkers is how many fdatasyncs one pass keeps in flight, each syncing
// one log through its own descriptor: the device serves parallel flushes of
// different files better than a serial loop, and each blocks an OS thread.
// On the project machine (2 vCPUs, ext4 on virtio) a pass over 1,000 dirty
// logs took 497 ms serial, 232 ms with 8 in flight and 133 ms with 16, with
// no further gain at 64 (docs/benchmarks.md, "Flush pass: fdatasync per file
// or syncfs").
const syncWorkers = 16

// logsPerWorker is how many logs of a pass each fdatasync worker gets at
// least: a pass of a few dozen logs costs ~0.5 ms per log serial on the
// project machine, so a small pass (the usual one: the logs written in the
// last flush interval) syncs one log at a time and keeps the parallel workers
// for the passes where they pay (100 logs: 4 workers, 512 and more: 16).
const logsPerWorker = 32

// yieldLogsPerWorker replaces logsPerWorker when the pass yields
// (SetYield): one fdatasync in flight up to 512 dirty logs, one more per 512
// beyond. The yield's wait is what bounds a pass then: at ~0.5 ms per log and
// at most the hook's bound (the broker's is 2 ms) before each, 512 logs take
// at most ~1.3 s per worker, well inside the broker's 10 s interval, up to
// syncWorkers × 512 logs (docs/benchmarks.md, "Flush pass yielding to the
// commit log").
const yieldLogsPerWorker = 512

// passWorkers is how many workers sync n logs, at most max, one per per
// logs (logsPerWorker, or yieldLogsPerWorker).
func passWorkers(max, n, per int) int {
	return min(max, (n+per-1)/per)
}

// syncFSMin is the number of dirty logs on one file system from which a pass
// with SetSyncFS(true) uses one syncfs(2) instead of an fdatasync per log.
const syncFSMin = 8

// NewCommitter returns a committer with nothing marked. It starts no
// goroutine: every sync runs in a Flush.
func NewCommitter() *Committer {
	return &Committer{marked: map[*Log]struct{}{}, workers: syncWorkers}
}

// syncAll syncs logs (see Flush) and returns the logs whose sync failed, nil
// when none did. A log closed meanwhile counts as synced (its Close synced it).
// yield, when set, is called before each fdatasync, fsync or syncfs.
func (c *Committer) syncAll(logs map[*Log]struct{}, yield func()) map[*Log]error {
	var (
		mu   sync.Mutex
		errs map[*Log]error
	)
	record := func(l *Log, err error) {
		if err == nil || errors.Is(err, ErrClosed) { // Close synced it
			return
		}
		mu.Lock()
		if errs == nil {
			errs = map[*Log]error{}
		}
		errs[l] = err
		mu.Unlock()
	}
	if len(logs) == 1 {
		for l := range logs {
			record(l, l.flushSync(yield))
		}
		return errs
	}
	type fsKey struct {
		fs  fileSystem
		dev uint64
	}
	groups := map[fsKey][]*Log{}
	for l := range logs {
		k := fsKey{l.fs, l.dev}
		groups[k] = append(groups[k], l)
	}
	useSyncFS := c.syncFS.Load()
	work := make(chan *Log, len(logs))
	for k, g := range groups {
		if !useSyncFS || len(g) < syncFSMin {
			for _, l := range g {
				work <- l
			}
			continue
		}
		points := make([]syncPoint, len(g))
		for i, l := range g {
			points[i] = l.syncPointNow()
		}
		callYield(yield)
		err := k.fs.SyncFS(g[0].dir)
		for i, l := range g {
			if l.closed.Load() {
				continue // as Sync's ErrClosed: Close synced it
			}
			if ferr := l.failed(); ferr != nil {
				// Sticky (ErrSyncFailed): a later syncfs proves nothing
				// about the pages an earlier failure may have dropped.
				record(l, ferr)
				continue
			}
			if err != nil {
				l.syncMu.Lock()
				ferr := l.failSyncLocked(fmt.Errorf("segment log %s: syncfs: %w", l.dir, err))
				l.syncMu.Unlock()
				record(l, ferr)
				continue
			}
			l.markSynced(points[i])
		}
	}
	close(work)
	var wg sync.WaitGroup
	per := logsPerWorker
	if yield != nil {
		per = yieldLogsPerWorker
	}
	for range passWorkers(c.workers, len(logs), per) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				record(l, l.flushSync(yield))
			}
		}()
	}
	wg.Wait()
	return errs
}

// SetSyncFS makes every later pass sync the logs of one file system with
// one syncfs(2) once syncFSMin or more of them are dirty (on true), instead
// of an fdatasync of each through its own descriptor (the default).
//
// Only for file systems whose syncfs is known to write back and commit
// everything (vfs.SyncFSTrusted): syncfs reaches a file system only through
// its sync_fs method, and without one (FUSE, some network file systems) it
// returns 0 having synced nothing (issue 21). Safe for concurrent use.
func (c *Committer) SetSyncFS(on bool) { c.syncFS.Store(on) }

// SetYield sets the hook every later pass calls before each fdatasync,
// fsync or syncfs it issues (nil: none, the default), and makes it keep
// fewer in flight (yieldLogsPerWorker). The broker sets it to a wait for its
// commit log's sync in flight, bounded (2 ms), so that the pass interleaves
// with the commit log's group commits instead of queueing a dozen syncs
// ahead of one on the same device (issue 23). The hook must return: a pass
// waits for it. Called from the pass's workers, concurrently with itself.
// Safe for concurrent use with Flush (a pass uses the hook set when it
// started).
func (c *Committer) SetYield(yield func()) {
	c.mu.Lock()
	c.yield = yield
	c.mu.Unlock()
}

// Close makes later Flushes return ErrClosed. It syncs nothing: a Log's own
// Close syncs what is still marked, so logs are closed after their Committer.
// ErrClosed when already closed.
func (c *Committer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	return nil
}
