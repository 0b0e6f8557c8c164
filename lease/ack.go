package lease

import (
	"cmp"
	"slices"
)

// Status is the outcome an ack reports for one message (spec 4.3).
type Status uint8

const (
	StatusCompleted Status = iota // `completed` or `success` (or absent): terminal, commit
	StatusFailed                  // retry-like while budget remains, else terminal (DLQ)
	StatusRetry                   // retry-like: release for redelivery, never charged, never DLQ
	StatusDLQ                     // terminal: DLQ the message and commit past it
	StatusInvalid                 // anything else: reported, no state change
)

// Per-item error strings of spec 4.4 (the HTTP layer sends them verbatim).
const (
	ErrTextNotFound      = "Message not found"
	ErrTextInvalidLease  = "Invalid or expired lease"
	ErrTextInvalidStatus = "Invalid status: "
	ErrTextClamped       = "Not applied: an earlier message in this partition was released for retry"
)

// ParseStatus maps an ack's status string (spec 4.3). "" means completed;
// matching is exact (case-sensitive), as Queen compares.
func ParseStatus(s string) Status {
	switch s {
	case "", "completed", "success":
		return StatusCompleted
	case "failed":
		return StatusFailed
	case "retry":
		return StatusRetry
	case "dlq":
		return StatusDLQ
	default:
		return StatusInvalid
	}
}

// Ack is one acknowledgement, already resolved by the caller to an offset of
// this (partition, group).
type Ack struct {
	Index      int      // position in the request
	Offset     uint64   // resolved message offset; 0 = Message not found
	LeaseID    [16]byte // compared only when HasLeaseID
	HasLeaseID bool     // a non-empty leaseId was sent (unparsable ids: HasLeaseID with a zero ID, never live)
	Status     Status
	RawStatus  string // echoed in "Invalid status: <s>"
}

// Outcome is the result of one Ack, ready for the HTTP layer (spec 4.4).
type Outcome struct {
	Index            int
	Success          bool
	Error            string // one of the ErrText* strings, or "" on success
	LeaseReleased    bool
	DLQ              bool // this item's message goes to the DLQ (the caller writes the DLQ entry)
	AlreadyCommitted bool // at or below the cursor: reported, nothing moved (spec 4.6 step 4)
}

// ApplyAcks applies the acks of one (partition, group) to s, implementing spec
// 4.6 (and 5.2 when inTx). Outcomes are returned in input order; changed reports
// whether s was modified.
//
// Rules, in the order they are applied:
//   - Validation, per item, no state change (4.6 step 1): Offset 0 gives
//     "Message not found"; a leaseId that is not the live lease of s gives
//     "Invalid or expired lease" (an ack without a leaseId skips the check, 11
//     #56), except for an item at or below the cursor, which is case 4 before
//     any lease check (4.6 step 7: repeating a committed ack, whose lease is
//     gone, is idempotent); an invalid status gives "Invalid status: <s>".
//   - Valid items are walked in offset order. An item at or below the cursor is
//     reported success with AlreadyCommitted and moves nothing (4.6 steps 4, 7).
//   - A terminal item (completed, success, dlq, or failed with the budget spent,
//     Retries >= retryLimit) commits the cursor to its offset, finishing
//     everything before it (seed 000 "an ack is an offset commit"). dlq and
//     exhausted failed set DLQ. A commit reaching or passing the span end
//     releases the lease (LeaseReleased on that item) and resets Retries (4.5,
//     11 #14). retryLimit 0 sends the first failure to the DLQ (2.2).
//   - The first retry-like item (retry, or failed with budget left) stops the
//     walk: it releases the lease, charges Retries once if failed, and reports
//     success with LeaseReleased. Later retry-like items report the same; later
//     terminal items are not applied and report ErrTextClamped (4.6 step 3, 11
//     #12).
//   - A failed ack on a State with no cursor row (the zero State) is retry-like
//     whatever retryLimit says (11 #15).
//   - inTx (5.2, 11 #43): completed/success commit; failed and dlq go straight to
//     the DLQ (no budget) and release the lease; retry or any validation failure
//     returns abort=true and leaves s untouched.
func ApplyAcks(s *State, items []Ack, retryLimit int64, nowMicros int64, inTx bool) (out []Outcome, changed bool, abort bool) {
	var sc Scratch
	return sc.ApplyAcks(s, items, retryLimit, nowMicros, inTx)
}

// Scratch is the working memory of ApplyAcks for a caller that applies acks on
// every request (the broker pools one per ack request): the outcomes and the
// offset-ordered index list are kept and reused, so a batch of 100 acks
// allocates nothing once the scratch has grown to it. Not safe for concurrent
// use. The zero value is ready.
type Scratch struct {
	out   []Outcome
	valid []int
}

// ApplyAcks is the package's ApplyAcks with sc's memory: out is valid until
// sc's next ApplyAcks.
func (sc *Scratch) ApplyAcks(s *State, items []Ack, retryLimit int64, nowMicros int64, inTx bool) (out []Outcome, changed bool, abort bool) {
	if cap(sc.out) < len(items) {
		sc.out, sc.valid = make([]Outcome, len(items)), make([]int, 0, len(items))
	}
	out = sc.out[:len(items)]
	clear(out)
	work := *s
	valid := sc.valid[:0] // as long as out: append never grows it
	for i, it := range items {
		out[i].Index = it.Index
		switch {
		case it.Offset == 0:
			out[i].Error = ErrTextNotFound
		case it.HasLeaseID && it.Offset > work.Committed && (it.LeaseID != work.Lease.ID || !work.Lease.Live(nowMicros)):
			// An item at or below the cursor is case 4 whatever its leaseId says:
			// repeating a committed ack (whose lease the commit released) must
			// answer as it did the first time (4.6 step 7, 0.2: acks are idempotent).
			out[i].Error = ErrTextInvalidLease
		case it.Status >= StatusInvalid, inTx && it.Status == StatusRetry:
			out[i].Error = ErrTextInvalidStatus + it.RawStatus
		default:
			valid = append(valid, i)
			continue
		}
		if inTx {
			abort = true
		}
	}
	if abort {
		return out, false, true
	}
	// A popped batch is acknowledged in offset order: checking that is one pass, a stable sort
	// of the sorted list several.
	byOffset := func(a, b int) int { return cmp.Compare(items[a].Offset, items[b].Offset) }
	if !slices.IsSortedFunc(valid, byOffset) {
		slices.SortStableFunc(valid, byOffset)
	}

	budgetLeft := int64(work.Retries) < retryLimit || work == (State{})
	clamped := false
	for _, i := range valid {
		it, o := items[i], &out[i]
		if it.Offset <= work.Committed {
			o.Success, o.AlreadyCommitted = true, true
			continue
		}
		retryLike := !inTx && (it.Status == StatusRetry || (it.Status == StatusFailed && budgetLeft))
		if clamped {
			if retryLike {
				o.Success, o.LeaseReleased = true, true
			} else {
				o.Error = ErrTextClamped
			}
			continue
		}
		if retryLike {
			clamped = true
			if it.Status == StatusFailed {
				work.Retries++
			}
			release(&work)
			o.Success, o.LeaseReleased = true, true
			continue
		}
		work.Committed = it.Offset
		o.Success = true
		o.DLQ = it.Status == StatusDLQ || it.Status == StatusFailed
		switch {
		case it.Offset >= work.Lease.End:
			o.LeaseReleased = work.Lease.Held()
			work.Lease = Lease{}
			work.Retries = 0
		case inTx && o.DLQ && work.Lease.Held():
			release(&work)
			o.LeaseReleased = true
		}
	}
	changed = work != *s
	*s = work
	return out, changed, false
}
