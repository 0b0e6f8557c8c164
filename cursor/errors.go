package cursor

import (
	"errors"
	"fmt"
)

var (
	// ErrBadSubscriptionFrom: subscriptionFrom is neither "now" nor ISO 8601 (spec 3.8).
	ErrBadSubscriptionFrom = errors.New("invalid subscriptionFrom")
	// ErrClosed: the Engine was closed.
	ErrClosed = errors.New("cursor engine closed")
	// ErrNotStarted: Wait or Snapshot before Start (recovery is not over).
	ErrNotStarted = errors.New("cursor engine not started")
	// ErrStarted: ApplyCheckpoint after Start (recovery is over).
	ErrStarted = errors.New("cursor engine already started")
	// ErrCorrupt is wrapped in a *CorruptionError for a damaged snapshot or
	// damaged format 1 or 2 files, and by ApplyCheckpoint for a body that
	// does not decode.
	ErrCorrupt = errors.New("cursor state corrupt")
)

// CorruptionError describes on-disk damage: which file, which byte range,
// and (in format 1 and 2 journals) the checkpoint sequence number before it.
type CorruptionError struct {
	File               string
	StartByte, EndByte int64  // [StartByte, EndByte) of the damaged region
	AfterSeq           uint64 // format 1 and 2 journals: last good checkpoint before the damage (0 = none)
	Reason             string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s bytes %d..%d (after checkpoint %d): %s", e.File, e.StartByte, e.EndByte, e.AfterSeq, e.Reason)
}

func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// CheckpointError is what Wait returns when the checkpoint that was to hold
// the caller's changes failed: the changes are not durable (a caller answers
// 5xx and undoes what it promised nobody yet). Err is the Log's error
// (errors.Is finds commitlog.ErrNoSpace or commitlog.ErrFailed through it).
type CheckpointError struct {
	Err error
	// Sticky: the Log said Err is not retryable; every later Wait fails too
	// until a restart (see Failure).
	Sticky bool
}

func (e *CheckpointError) Error() string {
	if e.Sticky {
		return "cursor checkpoint failed, log unusable until restart: " + e.Err.Error()
	}
	return "cursor checkpoint failed (retrying): " + e.Err.Error()
}

func (e *CheckpointError) Unwrap() error { return e.Err }
