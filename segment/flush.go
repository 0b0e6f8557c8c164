package segment

import (
	"errors"
	"fmt"
)

// Mark notes that l has appends to make durable at the next Flush. It costs
// an atomic load when l is already marked, and one short lock otherwise.
// Mark and Flush are the caller's own schedule (the broker's background
// flush pass, issue 14). Safe for concurrent use. A Log is marked through one
// Committer only.
func (c *Committer) Mark(l *Log) {
	if l.marked.Load() {
		return
	}
	c.mu.Lock()
	if !l.marked.Load() {
		l.marked.Store(true)
		c.marked[l] = struct{}{}
	}
	c.mu.Unlock()
}

// Flush makes every marked log durable now: everything appended to it
// before it was marked (and before Flush started) is on stable storage when
// Flush returns nil. Each log is synced as Log.Sync does (the sealed files a
// deferred rotation left unsynced, the active file, and the directory when a
// file was created in it), each file through its own descriptor, with up to
// syncWorkers fdatasyncs in flight; with SetSyncFS(true), one syncfs(2) for
// 8 or more logs on one file system instead. With SetYield's hook, the hook
// runs before each of them and fewer are in flight (Committer).
//
// The marks are taken when Flush starts: a Mark during the Flush is for the
// next one. A log whose sync fails stays marked (its failure is sticky, see
// ErrSyncFailed: it fails every later Flush until the caller closes it); a
// closed log is dropped (Close synced it). Returns the failures, joined;
// ErrClosed after Close (the logs' own Close syncs what is still marked).
// Safe for concurrent use, with itself too.
func (c *Committer) Flush() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	logs := c.marked
	if len(logs) == 0 {
		c.mu.Unlock()
		return nil
	}
	yield := c.yield
	c.marked = make(map[*Log]struct{}, len(logs))
	for l := range logs {
		// Unmarked before its sync starts: an append marked from now on
		// may come after the sync's start, so it marks l again.
		l.marked.Store(false)
	}
	c.mu.Unlock()

	errs := c.syncAll(logs, yield)
	if len(errs) == 0 {
		return nil
	}
	var err error
	for l, e := range errs {
		c.Mark(l)
		err = errors.Join(err, e)
	}
	return fmt.Errorf("segment: flush of %d logs: %d failed: %w", len(logs), len(errs), err)
}

// flushSync is Sync with yield (a Committer's SetYield hook, nil for none)
// called before each fdatasync or fsync: ErrClosed once l is closed.
func (l *Log) flushSync(yield func()) error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.syncNow(yield)
}

// Dirty reports whether l has appends that no sync covers yet (what Mark
// and Flush are for); !Synced().
func (l *Log) Dirty() bool { return l.dirty() }
