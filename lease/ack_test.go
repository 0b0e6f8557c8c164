package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestApplyAcks(t *testing.T) {
	now := 1000 * sec
	live := Lease{ID: id(1), WorkerID: "w", Start: 1, End: 10, ExpiresAtMicros: now + 30*sec, Attempts: 1}
	held := State{Lease: live}
	// remembered is live after a retry release: same span, no id.
	remembered := Lease{Start: 1, End: 10, Attempts: 1}
	ok := Outcome{Success: true}
	rel := Outcome{Success: true, LeaseReleased: true}
	done := Outcome{Success: true, AlreadyCommitted: true}
	ack := func(off uint64, st Status) Ack { return Ack{Offset: off, Status: st} }
	withLease := func(a Ack, l [16]byte) Ack { a.LeaseID, a.HasLeaseID = l, true; return a }

	cases := []struct {
		name      string
		s         State
		items     []Ack
		limit     int64
		inTx      bool
		want      []Outcome
		wantState State
		changed   bool
		abort     bool
	}{
		{name: "spec 4.6 step 2: completed moves the cursor to the message",
			s: held, items: []Ack{withLease(ack(5, StatusCompleted), id(1))}, limit: 3,
			want: []Outcome{ok}, wantState: State{Committed: 5, Lease: live}, changed: true},
		{name: "seed 000: acking one message finishes everything before it",
			s: held, items: []Ack{ack(7, StatusCompleted)}, limit: 3,
			want: []Outcome{ok}, wantState: State{Committed: 7, Lease: live}, changed: true},
		{name: "spec 4.6 step 2: a commit reaching the span end releases the lease and resets retries",
			s: State{Committed: 4, Retries: 2, Lease: live}, items: []Ack{withLease(ack(10, StatusCompleted), id(1))}, limit: 3,
			want: []Outcome{rel}, wantState: State{Committed: 10}, changed: true},
		{name: "spec 4.6 step 5: an ack beyond the span is an offset commit",
			s: held, items: []Ack{ack(15, StatusCompleted)}, limit: 3,
			want: []Outcome{rel}, wantState: State{Committed: 15}, changed: true},
		{name: "spec 4.6 step 1: unknown message is Message not found, no change",
			s: held, items: []Ack{ack(0, StatusCompleted)}, limit: 3,
			want: []Outcome{{Error: ErrTextNotFound}}, wantState: held},
		{name: "spec 4.6 step 1: a leaseId that is not the live lease is refused",
			s: held, items: []Ack{withLease(ack(5, StatusCompleted), id(2))}, limit: 3,
			want: []Outcome{{Error: ErrTextInvalidLease}}, wantState: held},
		{name: "spec 4.6 step 1: the leaseId of an expired lease is refused",
			s:     State{Lease: Lease{ID: id(1), Start: 1, End: 10, ExpiresAtMicros: now, Attempts: 1}},
			items: []Ack{withLease(ack(5, StatusCompleted), id(1))}, limit: 3,
			want:      []Outcome{{Error: ErrTextInvalidLease}},
			wantState: State{Lease: Lease{ID: id(1), Start: 1, End: 10, ExpiresAtMicros: now, Attempts: 1}}},
		{name: "spec 4.6 step 1: the leaseId after a release is refused",
			s: State{Retries: 1, Lease: remembered}, items: []Ack{withLease(ack(5, StatusCompleted), id(1))}, limit: 3,
			want: []Outcome{{Error: ErrTextInvalidLease}}, wantState: State{Retries: 1, Lease: remembered}},
		{name: "spec 4.1: an unparsable leaseId (zero id) is never live",
			s: State{}, items: []Ack{withLease(ack(5, StatusCompleted), [16]byte{})}, limit: 3,
			want: []Outcome{{Error: ErrTextInvalidLease}}, wantState: State{}},
		{name: "spec 4.6 step 1 / 11 #56: an ack without leaseId skips the lease check",
			s: held, items: []Ack{ack(3, StatusCompleted)}, limit: 3,
			want: []Outcome{ok}, wantState: State{Committed: 3, Lease: live}, changed: true},
		{name: "spec 4.3 / 11 #35: an unknown status is Invalid status: <s>, no change",
			s: held, items: []Ack{{Offset: 5, Status: StatusInvalid, RawStatus: "bogus"}}, limit: 3,
			want: []Outcome{{Error: "Invalid status: bogus"}}, wantState: held},
		{name: "spec 4.3: dlq copies to the DLQ and commits past it",
			s: held, items: []Ack{ack(4, StatusDLQ)}, limit: 3,
			want: []Outcome{{Success: true, DLQ: true}}, wantState: State{Committed: 4, Lease: live}, changed: true},
		{name: "spec 4.5: failed with budget left releases the lease and charges one retry",
			s: held, items: []Ack{withLease(ack(1, StatusFailed), id(1))}, limit: 3,
			want: []Outcome{rel}, wantState: State{Retries: 1, Lease: remembered}, changed: true},
		{name: "spec 4.5: a failed nack of many messages in one span charges one retry",
			s: held, items: []Ack{ack(1, StatusFailed), ack(2, StatusFailed), ack(3, StatusFailed)}, limit: 3,
			want: []Outcome{rel, rel, rel}, wantState: State{Retries: 1, Lease: remembered}, changed: true},
		{name: "spec 4.5: failed with the budget spent goes to the DLQ and commits past it",
			s: State{Retries: 3, Lease: live}, items: []Ack{ack(4, StatusFailed)}, limit: 3,
			want: []Outcome{{Success: true, DLQ: true}}, wantState: State{Committed: 4, Retries: 3, Lease: live}, changed: true},
		{name: "spec 4.5: on the last delivery each failed message goes to the DLQ and the span end resets retries (11 #14)",
			s: State{Retries: 1, Lease: live}, items: []Ack{ack(9, StatusFailed), ack(10, StatusFailed)}, limit: 1,
			want: []Outcome{{Success: true, DLQ: true}, {Success: true, DLQ: true, LeaseReleased: true}}, wantState: State{Committed: 10}, changed: true},
		{name: "spec 2.2: retryLimit 0 sends the first failure straight to the DLQ",
			s: held, items: []Ack{ack(10, StatusFailed)}, limit: 0,
			want: []Outcome{{Success: true, DLQ: true, LeaseReleased: true}}, wantState: State{Committed: 10}, changed: true},
		{name: "spec 4.3: retry releases the lease without charging the budget",
			s: held, items: []Ack{ack(1, StatusRetry)}, limit: 3,
			want: []Outcome{rel}, wantState: State{Lease: remembered}, changed: true},
		{name: "spec 4.3: retry never goes to the DLQ, even with the budget spent",
			s: State{Retries: 3, Lease: live}, items: []Ack{ack(1, StatusRetry)}, limit: 3,
			want: []Outcome{rel}, wantState: State{Retries: 3, Lease: remembered}, changed: true},
		{name: "spec 4.6 step 3: terminal items before the first retry-like one commit; later terminal ones are not applied",
			s: held, items: []Ack{ack(3, StatusCompleted), ack(5, StatusFailed), ack(7, StatusCompleted), ack(8, StatusRetry), ack(9, StatusDLQ)}, limit: 3,
			want:      []Outcome{ok, rel, {Error: ErrTextClamped}, rel, {Error: ErrTextClamped}},
			wantState: State{Committed: 3, Retries: 1, Lease: remembered}, changed: true},
		{name: "spec 4.6: items are walked in message order, not request order",
			s: held, items: []Ack{ack(7, StatusCompleted), ack(5, StatusRetry), ack(2, statusSuccess())}, limit: 3,
			want:      []Outcome{{Error: ErrTextClamped}, rel, ok},
			wantState: State{Committed: 2, Lease: remembered}, changed: true},
		{name: "spec 4.6 step 3: the budget is charged once even when the stopping item is retry and a later one failed",
			s: held, items: []Ack{ack(2, StatusRetry), ack(3, StatusFailed)}, limit: 3,
			want: []Outcome{rel, rel}, wantState: State{Lease: remembered}, changed: true},
		{name: "spec 4.6 step 4: an ack below the cursor is reported and never moves it backwards",
			s: State{Committed: 10}, items: []Ack{ack(5, StatusCompleted)}, limit: 3,
			want: []Outcome{done}, wantState: State{Committed: 10}},
		{name: "spec 4.6 step 4: a failed ack below the cursor releases nothing and goes nowhere",
			s:     State{Committed: 10, Lease: Lease{ID: id(1), Start: 11, End: 20, ExpiresAtMicros: now + sec, Attempts: 1}},
			items: []Ack{ack(10, StatusFailed)}, limit: 0,
			want:      []Outcome{done},
			wantState: State{Committed: 10, Lease: Lease{ID: id(1), Start: 11, End: 20, ExpiresAtMicros: now + sec, Attempts: 1}}},
		{name: "spec 4.6 step 7: a repeated ack is idempotent",
			s: held, items: []Ack{ack(5, StatusCompleted), ack(5, StatusCompleted)}, limit: 3,
			want: []Outcome{ok, done}, wantState: State{Committed: 5, Lease: live}, changed: true},
		{name: "spec 4.6 step 7: repeating a committed ack with its released leaseId is case 4, not an invalid lease",
			s: State{Committed: 10}, items: []Ack{withLease(ack(10, StatusCompleted), id(1))}, limit: 3,
			want: []Outcome{done}, wantState: State{Committed: 10}},
		{name: "spec 4.6 step 7: a committed ack repeated under a stale leaseId while another lease is live is case 4",
			s:     State{Committed: 10, Lease: Lease{ID: id(2), Start: 11, End: 20, ExpiresAtMicros: now + sec, Attempts: 1}},
			items: []Ack{withLease(ack(7, StatusCompleted), id(1))}, limit: 3,
			want:      []Outcome{done},
			wantState: State{Committed: 10, Lease: Lease{ID: id(2), Start: 11, End: 20, ExpiresAtMicros: now + sec, Attempts: 1}}},
		{name: "spec 4.6 step 7: a repeated committed ack inside a transaction is case 4 and does not abort",
			s: State{Committed: 10}, items: []Ack{withLease(ack(10, StatusCompleted), id(1))}, limit: 3, inTx: true,
			want: []Outcome{done}, wantState: State{Committed: 10}},
		{name: "spec 4.6 step 1: above the cursor a stale leaseId is still refused",
			s: State{Committed: 10}, items: []Ack{withLease(ack(11, StatusCompleted), id(1))}, limit: 3,
			want: []Outcome{{Error: ErrTextInvalidLease}}, wantState: State{Committed: 10}},
		{name: "spec 4.6 step 6: an ack where the group has no cursor creates it at that message",
			s: State{}, items: []Ack{ack(4, StatusCompleted)}, limit: 3,
			want: []Outcome{ok}, wantState: State{Committed: 4}, changed: true},
		{name: "spec 11 #15: a failed ack with no cursor row is retry-like, even with retryLimit 0",
			s: State{}, items: []Ack{ack(4, StatusFailed)}, limit: 0,
			want: []Outcome{rel}, wantState: State{Retries: 1}, changed: true},
		{name: "spec 5.2: in a transaction completed commits",
			s: held, items: []Ack{ack(10, StatusCompleted)}, limit: 3, inTx: true,
			want: []Outcome{rel}, wantState: State{Committed: 10}, changed: true},
		{name: "spec 5.2 / 11 #43: in a transaction failed goes straight to the DLQ and releases the lease",
			s: held, items: []Ack{ack(5, StatusFailed)}, limit: 3, inTx: true,
			want: []Outcome{{Success: true, DLQ: true, LeaseReleased: true}}, wantState: State{Committed: 5, Lease: remembered}, changed: true},
		{name: "spec 5.2: in a transaction dlq at the span end commits and releases",
			s: held, items: []Ack{ack(10, StatusDLQ)}, limit: 3, inTx: true,
			want: []Outcome{{Success: true, DLQ: true, LeaseReleased: true}}, wantState: State{Committed: 10}, changed: true},
		{name: "spec 5.2: retry aborts the transaction and changes nothing",
			s: held, items: []Ack{ack(3, StatusCompleted), {Offset: 4, Status: StatusRetry, RawStatus: "retry"}}, limit: 3, inTx: true,
			want: []Outcome{{}, {Error: "Invalid status: retry"}}, wantState: held, abort: true},
		{name: "spec 5.2: a failed validation aborts the transaction",
			s: held, items: []Ack{ack(3, StatusCompleted), ack(0, StatusCompleted)}, limit: 3, inTx: true,
			want: []Outcome{{}, {Error: ErrTextNotFound}}, wantState: held, abort: true},
		{name: "spec 4.4: outcomes keep the request's indexes",
			s: held, items: []Ack{{Index: 4, Offset: 2}, {Index: 9, Offset: 0}}, limit: 3,
			want: []Outcome{{Index: 4, Success: true}, {Index: 9, Error: ErrTextNotFound}}, wantState: State{Committed: 2, Lease: live}, changed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			out, changed, abort := ApplyAcks(&s, c.items, c.limit, now, c.inTx)
			assert.Equal(t, c.want, out)
			assert.Equal(t, c.wantState, s)
			assert.Equal(t, c.changed, changed, "changed")
			assert.Equal(t, c.abort, abort, "abort")
		})
	}
}

// statusSuccess is `success`, the alias of completed (spec 4.3).
func statusSuccess() Status { return ParseStatus("success") }
