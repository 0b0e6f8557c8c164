package segment

import (
	"fmt"
	"os"
)

// Sync makes everything appended before the call durable: fdatasync of the
// sealed files a deferred rotation left unsynced (Options.DeferRotationSync;
// otherwise rotation synced them), of the active segment file, and of the
// directory when a file was created since the last Sync. Index and dedup
// files are caches and are never synced. Safe concurrently with Append and
// Read.
func (l *Log) Sync() error { return l.flushSync(nil) }

// syncNow is Sync; yield, when set, is called before each fdatasync or
// directory fsync it issues (a Committer's Flush passes Committer.SetYield's
// hook: the broker's commit log goes first, issue 23).
func (l *Log) syncNow(yield func()) error {
	seq := l.appendSeq.Load()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.failure != nil {
		return l.failure
	}
	if l.syncedSeq.Load() >= seq && !l.needDirSync && len(l.pending) == 0 {
		// A sync that ran while we queued for syncMu covered our appends:
		// concurrent callers on one log share one fdatasync.
		return nil
	}
	// Cover everything appended so far, so the callers queued behind us
	// find their appends synced.
	seq = l.appendSeq.Load()
	// Every offset below next is in the page cache of the active file or a
	// pending one (written before it was published; no rotation while
	// syncMu is held): the syncs below cover it.
	next := l.NextOffset()
	if err := l.syncPendingLocked(yield); err != nil {
		return err
	}
	l.mu.RLock()
	act := l.active
	var released string // the active file of a released Log, by name
	if act == nil && len(l.files) > 0 && l.syncedSeq.Load() < seq {
		released = join(l.dir, segName(l.files[len(l.files)-1].base))
	}
	l.mu.RUnlock()
	if act != nil {
		callYield(yield)
		if err := act.seg.Sync(); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: sync: %w", l.dir, err))
		}
	} else if released != "" {
		callYield(yield)
		if err := l.syncReleased(released); err != nil {
			return l.failSyncLocked(err)
		}
	}
	if l.needDirSync {
		callYield(yield)
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: sync directory: %w", l.dir, err))
		}
		l.needDirSync = false
	}
	l.markDurable(next)
	for {
		cur := l.syncedSeq.Load()
		if cur >= seq || l.syncedSeq.CompareAndSwap(cur, seq) {
			return nil
		}
	}
}

// callYield calls yield when set.
func callYield(yield func()) {
	if yield != nil {
		yield()
	}
}

// markDurable records that a sync covered every offset below next.
func (l *Log) markDurable(next uint64) {
	l.mu.Lock()
	if l.unsyncedFrom != 0 && l.unsyncedFrom < next {
		l.unsyncedFrom = 0
		if l.next > next {
			l.unsyncedFrom = next // appended since the sync started
		}
	}
	l.mu.Unlock()
}

// DurableNext returns the offset below which every offset appended is on
// stable storage by a successful sync (Sync or a Committer's Flush):
// NextOffset when no append is unsynced, else the first unsynced offset.
// Offsets the Log was opened with count as durable (recovery cut it to what
// was). A flush pass records this, not NextOffset, as what a file holds for
// certain (issue 21): an append published before the pass read NextOffset
// may reach the Committer's marked set only after the pass took it.
func (l *Log) DurableNext() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.unsyncedFrom != 0 && l.unsyncedFrom < l.next {
		return l.unsyncedFrom
	}
	return l.next
}

// syncReleased fdatasyncs the active file of a released Log through a
// descriptor of its own (syncMu held): the appends Release left unsynced
// (handles.go). The descriptor is not counted by the HandleCache: it lives
// for one fdatasync. A load racing it opens the same file; appends after
// seq are not claimed by this sync.
func (l *Log) syncReleased(path string) error {
	f, err := l.fs.OpenFile(path, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("segment log %s: sync released file: %w", l.dir, err)
	}
	serr := f.Sync()
	cerr := f.Close()
	if serr != nil {
		return fmt.Errorf("segment log %s: sync released file %s: %w", l.dir, path, serr)
	}
	if cerr != nil {
		return fmt.Errorf("segment log %s: close released file %s: %w", l.dir, path, cerr)
	}
	return nil
}

// pendingFile is a sealed file a deferred rotation left unsynced: its
// handle, and its number in the order of such rotations (Log.sealedSeq).
type pendingFile struct {
	f   file
	seq uint64
}

// syncPendingLocked fdatasyncs the sealed files a deferred rotation left
// unsynced, oldest first, and closes each once it is durable (syncMu held);
// yield as syncNow's.
// A failure is sticky (failSyncLocked) and leaves that file and the newer
// ones pending.
func (l *Log) syncPendingLocked(yield func()) error {
	for len(l.pending) > 0 {
		p := l.pending[0]
		callYield(yield)
		if err := p.f.Sync(); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: sync sealed file %s: %w", l.dir, p.f.Name(), err))
		}
		l.mu.Lock()
		l.pending = l.pending[1:]
		if len(l.pending) == 0 {
			l.pending = nil // let the array go
		}
		l.mu.Unlock()
		_ = p.f.Close()
		l.cache.adjust(l, -1)
	}
	return nil
}

// closePendingLocked closes the pending handles without syncing them (Close
// and Release after their sync, or after a failed one: the log is done with
// them). syncMu and mu held; the caller settles the handle count.
func (l *Log) closePendingLocked() {
	for _, p := range l.pending {
		_ = p.f.Close()
	}
	l.pending = nil
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
// appends counted so far, the active file then and the deferred rotations
// so far (the sealed files pending then).
type syncPoint struct {
	seq       uint64
	next      uint64 // NextOffset then: the offsets below it were in the page cache
	active    *openFile
	sealedSeq uint64
}

func (l *Log) syncPointNow() syncPoint {
	p := syncPoint{seq: l.appendSeq.Load()}
	l.mu.RLock()
	p.active, p.sealedSeq, p.next = l.active, l.sealedSeq, l.next
	l.mu.RUnlock()
	return p
}

// markSynced records that a SyncFS which started after p covered the log. The
// directory counts as synced only if no rotation created a file since p; the
// sealed files pending at p are durable, and closed.
func (l *Log) markSynced(p syncPoint) {
	l.syncMu.Lock()
	l.mu.Lock()
	if l.active == p.active {
		l.needDirSync = false
	}
	n := 0
	for n < len(l.pending) && l.pending[n].seq <= p.sealedSeq {
		n++
	}
	done := l.pending[:n:n]
	l.pending = l.pending[n:]
	l.mu.Unlock()
	for _, d := range done {
		_ = d.f.Close()
	}
	l.cache.adjust(l, -len(done))
	l.syncMu.Unlock()
	l.markDurable(p.next)
	for {
		cur := l.syncedSeq.Load()
		if cur >= p.seq || l.syncedSeq.CompareAndSwap(cur, p.seq) {
			return
		}
	}
}
