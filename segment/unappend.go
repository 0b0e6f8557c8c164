package segment

import (
	"errors"
	"fmt"
)

// ErrNotLast is returned by Unappend when first is not the base of the last
// segment of the active file (nothing is changed).
var ErrNotLast = errors.New("segment: not the last segment appended")

// Unappend takes back the last segment Append or AppendTo wrote, whose first
// offset is first: the active file is cut back to where the segment started,
// its index entry goes, NextOffset is first again and the dedup table forgets
// its transaction ids. It is for a caller that wrote the segment and then
// could not make it durable anywhere else before publishing it (the broker's
// commit log had no space for its entry, issue 21): without it the file
// would hold records no commit-log entry covers, and a retry would append
// them twice. Nothing read the segment as published: the caller has not
// published it.
//
// The cut is not synced: a crash may leave the segment in the file, past
// what the caller's recovery rule keeps (no commit-log entry covers it), and
// recovery cuts it then. A file that a rotation created for the segment
// stays, empty, as the active file (as after a failed write).
//
// Errors: ErrNotLast (nothing changed), ErrClosed, the sticky failure, or a
// failed cut (the log is then failed until reopened: ErrWriteFailed, as when
// a failed write cannot be cut back).
//
// Not safe for concurrent use with Append, AppendTo, AppendSegment,
// DeleteFilesBefore or Close (the caller holds the partition lock, as for
// the Append it undoes).
func (l *Log) Unappend(first uint64) error {
	if err := l.writable(); err != nil {
		return err
	}
	if err := l.pin(); err != nil {
		return fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	if err := l.cutLast(first); err != nil {
		var cut *cutError
		if errors.As(err, &cut) {
			// Sticky, taken after mu is released: syncNow holds syncMu and then
			// takes mu, so failing under mu deadlocked against a flush pass's sync
			// (found by fsck/powertest: an ack's dead letters taken back after a
			// power cut failed the commit log, while a flush pass synced the log).
			return l.fail(ErrWriteFailed, cut.err)
		}
		return err
	}
	l.dedup.Undo(first)
	return nil
}

// cutError is cutLast's failure to cut the file back: Unappend makes it the
// Log's sticky failure once mu is released.
type cutError struct{ err error }

func (e *cutError) Error() string { return e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// cutLast cuts the active file's last segment, which must start at first,
// under mu held exclusively (readers never see a file shorter than the end
// they were told). A failed cut is a *cutError, for Unappend to make sticky.
func (l *Log) cutLast(first uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	act := l.active
	if act == nil {
		return fmt.Errorf("segment log %s: unappend offset %d: no active file: %w", l.dir, first, ErrNotLast)
	}
	fi := act.info
	last, ok := act.idx.Last()
	if !ok || last.Base != first || fi.next != first+uint64(last.Count) || l.next != fi.next {
		return fmt.Errorf("segment log %s: unappend offset %d (next offset %d): %w", l.dir, first, l.next, ErrNotLast)
	}
	if err := act.seg.Truncate(last.Pos); err != nil {
		return &cutError{fmt.Errorf("segment log %s: unappend offset %d: cut %s back to byte %d: %w",
			l.dir, first, segName(fi.base), last.Pos, err)}
	}
	act.idx.Truncate(act.idx.Len() - 1)
	fi.size, fi.next = last.Pos, first
	if prev, ok := act.idx.Last(); ok {
		fi.lastTs = prev.TimestampMicros
		l.lastTs = fi.lastTs
	} else {
		fi.firstTs, fi.lastTs = 0, 0
		if n := len(l.files); n > 1 {
			l.lastTs = l.files[n-2].lastTs
		} // else: no earlier segment says otherwise; timestamps never go backwards anyway
	}
	l.next = first
	return nil
}
