package broker

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/commitlog"
)

// ErrNoSpace is wrapped by the error of a request the disk had no room for:
// a write that failed with ENOSPC or EDQUOT, or the commit log's
// commitlog.ErrNoSpace (issue 21). A full disk is a state, never damage:
// whatever the request wrote is taken back (segment.Log.Unappend, a new
// partition's directory removed), nothing is marked damaged, and the same
// request succeeds once space is freed, without a restart. HTTP answers 507
// Insufficient Storage with the reason (httpapi/respond.go); Queen's clients
// retry 5xx, and transactionId dedup makes the retry safe (spec 0.1).
var ErrNoSpace = errors.New("no space left on device")

// IsNoSpace reports whether err says the disk (or the user's quota) is full:
// ErrNoSpace, ENOSPC, EDQUOT or commitlog.ErrNoSpace anywhere in its chain.
func IsNoSpace(err error) bool {
	return err != nil && (errors.Is(err, ErrNoSpace) || errors.Is(err, unix.ENOSPC) ||
		errors.Is(err, unix.EDQUOT) || errors.Is(err, commitlog.ErrNoSpace))
}

// noSpaceError is a request's full-disk error: where names what could not be
// written ("commit log", "queue q partition p: segment file", ...), err is
// the I/O error (kept in the chain: errors.Is finds unix.ENOSPC).
type noSpaceError struct {
	where string
	err   error
}

func (e *noSpaceError) Error() string {
	return fmt.Sprintf("no space left on device: %s could not be written (%v); free disk space and retry, nothing was stored", e.where, e.err)
}

func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.err} }

// noSpace wraps err as a full-disk error naming where when it is one
// (IsNoSpace), and notes the state for GET /health (NoSpace); any other err
// is returned as it is.
func (b *Broker) noSpace(where string, err error) error {
	if !IsNoSpace(err) {
		return err
	}
	var ns *noSpaceError
	if !errors.As(err, &ns) {
		err = &noSpaceError{where: where, err: err}
	}
	b.noSpaceSince.CompareAndSwap(0, b.now().UnixMicro())
	reason := err.Error()
	b.noSpaceReason.Store(&reason)
	return err
}

// wroteOK ends the full-disk state NoSpace reports: a write that needs disk
// space (an append, a flush pass) succeeded.
func (b *Broker) wroteOK() {
	if b.noSpaceSince.Load() != 0 {
		b.noSpaceSince.Store(0)
	}
}

// NoSpaceState is GET /health's full-disk state: why the last write that
// failed for want of space failed, and since when writes fail so.
type NoSpaceState struct {
	Reason      string
	SinceMicros int64
}

// NoSpace reports whether writes are failing for want of disk space: from a
// request answered ErrNoSpace until the next append or flush pass that
// succeeds. It is a state (degraded), never damage: nothing is out of
// service, and the broker needs no restart once space is freed.
func (b *Broker) NoSpace() (NoSpaceState, bool) {
	since := b.noSpaceSince.Load()
	if since == 0 {
		return NoSpaceState{}, false
	}
	st := NoSpaceState{SinceMicros: since, Reason: ErrNoSpace.Error()}
	if r := b.noSpaceReason.Load(); r != nil {
		st.Reason = *r
	}
	return st, true
}
