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
	// ErrCorrupt is wrapped in a *CorruptionError for damage recovery cannot
	// repair by dropping a torn tail (mid-journal damage, a bad snapshot).
	ErrCorrupt = errors.New("cursor journal corrupt")
	// errShort: a buffer ends inside a header or body (a torn write when at the tail).
	errShort = errors.New("truncated")
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
