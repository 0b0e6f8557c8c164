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
// from syncFSMin of them on. What survives a crash is always a prefix of what
// was appended: recovery truncates a torn tail.
type Committer struct {
	mu     sync.Mutex
	marked map[*Log]struct{} // Mark's set, taken by Flush (flush.go)
	closed bool

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

// passWorkers is how many workers sync n logs, at most max.
func passWorkers(max, n int) int {
	return min(max, (n+logsPerWorker-1)/logsPerWorker)
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
func (c *Committer) syncAll(logs map[*Log]struct{}) map[*Log]error {
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
			record(l, l.Sync())
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
	for range passWorkers(c.workers, len(logs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				record(l, l.Sync())
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
