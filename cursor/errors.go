package cursor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

var (
	// ErrBadSubscriptionFrom: subscriptionFrom is neither "now" nor ISO 8601 (spec 3.8).
	ErrBadSubscriptionFrom = errors.New("invalid subscriptionFrom")
	// ErrClosed: the Engine was closed.
	ErrClosed = errors.New("cursor engine closed")
	// ErrCorrupt is wrapped in a *CorruptionError for damage recovery cannot
	// repair by dropping a torn tail (mid-journal damage, a bad snapshot).
	ErrCorrupt = errors.New("cursor journal corrupt")
	// ErrRecordTooLarge: AddRecord was given more than MaxRecordBytes.
	ErrRecordTooLarge = errors.New("cursor redo record too large")
)

// CorruptionError describes on-disk damage: which file, which byte range, and
// the checkpoint sequence numbers around it.
type CorruptionError struct {
	File               string
	StartByte, EndByte int64  // [StartByte, EndByte) of the damaged region
	AfterSeq           uint64 // last good checkpoint before the damage (0 = none)
	Reason             string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s bytes %d..%d (after checkpoint %d): %s", e.File, e.StartByte, e.EndByte, e.AfterSeq, e.Reason)
}

func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// CheckpointError is what Wait returns when the checkpoint that was to hold
// the caller's changes failed: the changes are not durable (a caller answers
// 5xx and undoes what it promised nobody yet). Err is the cause (errors.Is
// finds unix.ENOSPC, unix.EDQUOT, unix.EIO through it).
type CheckpointError struct {
	Err error
	// Sticky: a journal fdatasync failed; every later Wait fails too until a
	// restart (see Failure).
	Sticky bool
}

func (e *CheckpointError) Error() string {
	if e.Sticky {
		return "cursor checkpoint failed, journal unusable until restart: " + e.Err.Error()
	}
	return "cursor checkpoint failed (retrying): " + e.Err.Error()
}

func (e *CheckpointError) Unwrap() error { return e.Err }

// syncError marks a failed fdatasync of the journal: the one failure after
// which the file's contents are unknown (the kernel may have dropped the
// pages it could not write), so the engine stops writing (sticky), unless
// the device said it was out of space (nothing was written, see noSpace).
type syncError struct{ err error }

func (e *syncError) Error() string { return e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// noSpace reports a full disk or quota: the write did not happen, and the same
// write succeeds once space is freed.
func noSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// sticky reports whether err leaves the journal unusable (a failed fdatasync
// other than for space; issue 10: "only a failed fdatasync stays sticky").
func sticky(err error) bool {
	var se *syncError
	return errors.As(err, &se) && !noSpace(err)
}
