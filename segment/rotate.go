package segment

import (
	"fmt"

	"github.com/combmq/comb/index"
)

// maxDeferredFiles bounds the sealed files a Log keeps open, unsynced, under
// Options.DeferRotationSync: the rotation that would exceed it syncs them
// and the directory itself (one fdatasync per file in the append path, once
// per maxDeferredFiles × MaxFileBytes of data), so a caller that never
// flushes cannot make a log hold a handle per file it ever sealed.
const maxDeferredFiles = 8

// maybeRotate starts a new active file when there is none, or when the
// active one has reached MaxFileBytes or spans MaxFileAge of segment
// timestamps.
//
// Durability: without Options.DeferRotationSync the old file is fdatasynced
// (and the directory, if it has an unsynced entry) before the new file
// exists, whatever the sync policy: a crash can then only tear the newest
// file, never leave a gap between files. That is one sync per MaxFileBytes
// of data. With it nothing is synced here: the old file's handle is kept
// (l.pending) for the next Sync, and a crash may leave the old file's tail
// missing behind a newer file; OpenFrom cuts such a hole, and the caller's
// commit log fills it again.
func (l *Log) maybeRotate(tsMicros int64) error {
	old := l.active
	deferSync := l.opts.DeferRotationSync
	if old != nil {
		fi := old.info
		if fi.next == fi.base {
			return nil // empty: keep filling it
		}
		full := fi.size >= l.opts.MaxFileBytes
		aged := l.opts.MaxFileAge > 0 && tsMicros-fi.firstTs >= l.opts.MaxFileAge.Microseconds()
		if !full && !aged {
			return nil
		}
		if !deferSync {
			if err := old.seg.Sync(); err != nil {
				// As in Sync: the pages of a failed fdatasync may be gone.
				return l.fail(ErrSyncFailed, fmt.Errorf("sync %s before rotation: %w", segName(fi.base), err))
			}
		}
		if fi.heap != nil {
			// A sealed file always has its index file (Open checks sealed
			// files against it with one header read).
			l.mu.Lock()
			err := l.writeIndexLocked(old)
			l.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	valve := deferSync && len(l.pending) >= maxDeferredFiles
	if valve {
		if err := l.syncPendingLocked(nil); err != nil {
			return fmt.Errorf("sync the sealed files before rotation: %w", err)
		}
	}
	if l.needDirSync && (!deferSync || valve) {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.failLocked(ErrSyncFailed, fmt.Errorf("sync directory before rotation: %w", err))
		}
		l.needDirSync = false
	}
	fi := &fileInfo{base: l.next, next: l.next}
	seg, err := openAppend(l.fs, join(l.dir, segName(fi.base)), true)
	if err != nil {
		return err
	}
	if err := seg.Truncate(0); err != nil { // a leftover of a crashed rotation holds nothing we keep
		_ = seg.Close()
		return err
	}
	// The index starts in memory (lazyindex.go): no second file per new
	// segment file until it has LazyIndexSegments segments or is sealed.
	// A stale index file of that name (a crashed rotation of an older
	// version) is checked against the segments by Open like any other.
	fi.heap = &heapBacking{}
	idx, _, err := index.Load(fi.heap, fi.base)
	if err != nil {
		_ = seg.Close()
		return err
	}
	of := &openFile{info: fi, seg: seg, idx: idx}
	of.refs.Store(1)
	l.needDirSync = true
	l.mu.Lock()
	l.files = append(l.files, fi)
	l.active = of
	if old != nil && deferSync {
		l.sealedSeq++
		l.pending = append(l.pending, pendingFile{f: old.seg, seq: l.sealedSeq})
	}
	l.mu.Unlock()
	switch {
	case old == nil:
		l.cache.adjust(l, 2) // the first active file since Open or a load
	case deferSync:
		// The segment file stays open until a sync covers it; its index is
		// done with. No reader holds old (see below).
		_ = old.idx.Close(true)
		l.cache.adjust(l, 1)
	default:
		// No reader holds old: readers hold mu shared for as long as they use
		// a file, and from now on reach this one through the sealed cache.
		// No Sync holds it either: Sync runs under syncMu.
		old.close(true)
	}
	return nil
}
