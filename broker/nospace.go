package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// SpaceProbeFile is the file spaceBack writes (and removes) in the data
// directory; a crash can leave it behind.
const SpaceProbeFile = "SPACE-PROBE"

// noSpaceProbeBytes is the size (bytes) of the file spaceBack writes: more
// than a few KiB, so a disk with a page left does not flap between states.
const noSpaceProbeBytes = 256 << 10

// noSpaceProbeEvery is how long after the failure, and between two probes,
// spaceBack waits before it tries a write of its own.
const noSpaceProbeEvery = time.Second

// spaceBack reports whether the disk takes writes again although nothing has
// written since the failure at since (µs): a queue that is only popped from
// writes only to the preallocated commit log, so without a probe GET /health
// said "disk full" until the next push. It writes and removes
// <data>/SPACE-PROBE (at most once per noSpaceProbeEvery, the first one
// noSpaceProbeEvery after the failure), which a quota (EDQUOT) refuses too,
// where statfs would show free space; on success the state ends.
func (b *Broker) spaceBack(since int64) bool {
	now := b.now().UnixMicro()
	last := b.noSpaceProbed.Load()
	if now-since < noSpaceProbeEvery.Microseconds() || now-last < noSpaceProbeEvery.Microseconds() ||
		!b.noSpaceProbed.CompareAndSwap(last, now) {
		return false
	}
	name := filepath.Join(b.dir, SpaceProbeFile)
	f, err := b.fs.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return false
	}
	_, err = f.Write(make([]byte, noSpaceProbeBytes))
	f.Close()
	b.fs.Remove(name)
	if err != nil {
		return false
	}
	return b.noSpaceSince.CompareAndSwap(since, 0)
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
// succeeds, or a probe write of its own (spaceBack) does. It is a state (degraded), never damage: nothing is out of
// service, and the broker needs no restart once space is freed.
func (b *Broker) NoSpace() (NoSpaceState, bool) {
	since := b.noSpaceSince.Load()
	if since == 0 {
		return NoSpaceState{}, false
	}
	if b.spaceBack(since) {
		return NoSpaceState{}, false
	}
	st := NoSpaceState{SinceMicros: since, Reason: ErrNoSpace.Error()}
	if r := b.noSpaceReason.Load(); r != nil {
		st.Reason = *r
	}
	return st, true
}
