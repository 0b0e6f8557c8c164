package segment

import "fmt"

// Sync makes everything appended before the call durable: fdatasync of the
// active segment file (rotation already synced the older ones) and of the
// directory when a file was created since the last Sync. Index and dedup files are caches and are never synced. Safe
// concurrently with Append and Read.
func (l *Log) Sync() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.syncNow()
}

func (l *Log) syncNow() error {
	seq := l.appendSeq.Load()
	l.syncers.Add(1)
	defer l.syncers.Add(-1)
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.failure != nil {
		return l.failure
	}
	if l.syncedSeq.Load() >= seq && !l.needDirSync {
		// A sync that ran while we queued for syncMu covered our appends:
		// concurrent callers on one log share one fdatasync.
		return nil
	}
	// Cover everything appended so far, so the callers queued behind us
	// find their appends synced.
	seq = l.appendSeq.Load()
	l.mu.RLock()
	act := l.active
	l.mu.RUnlock()
	if act != nil {
		if err := act.seg.Sync(); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: sync: %w", l.dir, err))
		}
	}
	if l.needDirSync {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: sync directory: %w", l.dir, err))
		}
		l.needDirSync = false
	}
	for {
		cur := l.syncedSeq.Load()
		if cur >= seq || l.syncedSeq.CompareAndSwap(cur, seq) {
			return nil
		}
	}
}

// failSyncLocked makes a sync failure sticky (syncMu held): Linux may drop
// the dirty pages of a failed fdatasync and report success on the next one,
// so no later sync of this Log may claim durability (the fsyncgate lesson).
func (l *Log) failSyncLocked(err error) error {
	return l.failLocked(ErrSyncFailed, err)
}

// failLocked records the Log's first sticky failure (syncMu held): kind is
// ErrSyncFailed or ErrWriteFailed. Every later Append, Sync and Commit
// returns it until the Log is reopened.
func (l *Log) failLocked(kind, err error) error {
	if l.failure == nil {
		l.failure = fmt.Errorf("%w: %w", kind, err)
		l.failedFlag.Store(true)
	}
	return l.failure
}

// fail is failLocked taking syncMu.
func (l *Log) fail(kind, err error) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.failLocked(kind, err)
}

// failed returns the sticky failure, or nil.
func (l *Log) failed() error {
	if !l.failedFlag.Load() {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.failure
}

// dirty reports whether something was appended that no Sync covers yet.
func (l *Log) dirty() bool { return l.appendSeq.Load() > l.syncedSeq.Load() }

// syncPoint is what a file-system-wide sync must cover for one log: the
// appends counted so far and the active file then.
type syncPoint struct {
	seq    uint64
	active *openFile
}

func (l *Log) syncPointNow() syncPoint {
	p := syncPoint{seq: l.appendSeq.Load()}
	l.mu.RLock()
	p.active = l.active
	l.mu.RUnlock()
	return p
}

// markSynced records that a SyncFS which started after p covered the log. The
// directory counts as synced only if no rotation created a file since p.
func (l *Log) markSynced(p syncPoint) {
	l.syncMu.Lock()
	l.mu.RLock()
	if l.active == p.active {
		l.needDirSync = false
	}
	l.mu.RUnlock()
	l.syncMu.Unlock()
	for {
		cur := l.syncedSeq.Load()
		if cur >= p.seq || l.syncedSeq.CompareAndSwap(cur, p.seq) {
			return
		}
	}
}
