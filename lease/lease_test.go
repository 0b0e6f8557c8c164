package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func id(b byte) [16]byte { return [16]byte{15: b} }

const sec = int64(1_000_000)

func TestEffectiveSeconds(t *testing.T) {
	cases := []struct {
		name       string
		pop, queue int64
		want       int64
	}{
		{"spec 3.2: a positive leaseSeconds wins over the queue", 30, 300, 30},
		{"spec 3.2: no leaseSeconds uses the queue's leaseTime", 0, 300, 300},
		{"spec 3.2: a negative leaseSeconds is ignored", -5, 120, 120},
		{"seed 000: the fallback when a queue has none is 60 seconds", 0, 0, 60},
		{"MaxLeaseSeconds: a huge leaseSeconds is capped (int64 max once gave a lease born expired)", 9223372036854775807, 0, MaxLeaseSeconds},
		{"MaxLeaseSeconds: a huge queue leaseTime is capped", 0, 99999999999999, MaxLeaseSeconds},
		{"MaxLeaseSeconds: exactly the cap is kept", MaxLeaseSeconds, 0, MaxLeaseSeconds},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, EffectiveSeconds(c.pop, c.queue))
		})
	}
}

func TestCanClaim(t *testing.T) {
	now := 100 * sec
	cases := []struct {
		name string
		s    State
		want bool
	}{
		{"seed 000: no lease, claimable", State{Committed: 3}, true},
		{"seed 000: a live lease refuses a second claimer", State{Lease: Lease{ID: id(1), ExpiresAtMicros: now + 1}}, false},
		{"seed 000: the claim simply ignores expired leases", State{Lease: Lease{ID: id(1), ExpiresAtMicros: now}}, true},
		{"lease/doc: a released lease (zero id, span remembered) is claimable", State{Lease: Lease{Start: 1, End: 5, Attempts: 1}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, CanClaim(c.s, now))
		})
	}
}

func TestGrant(t *testing.T) {
	exp := 160 * sec
	cases := []struct {
		name string
		s    State
		end  uint64
		want State
	}{
		{"spec 3.5 step 4: a first claim leases [committed+1, end] with attempt 1",
			State{Committed: 4}, 9,
			State{Committed: 4, Lease: Lease{ID: id(7), WorkerID: "w", Start: 5, End: 9, ExpiresAtMicros: exp, Attempts: 1}}},
		{"seed 000: redelivery after expiry counts an attempt but keeps the retry budget",
			State{Committed: 4, Retries: 1, Lease: Lease{ID: id(1), Start: 5, End: 9, ExpiresAtMicros: 10, Attempts: 2}}, 12,
			State{Committed: 4, Retries: 1, Lease: Lease{ID: id(7), WorkerID: "w", Start: 5, End: 12, ExpiresAtMicros: exp, Attempts: 3}}},
		{"spec 3.10: redelivery after a retry release counts an attempt",
			State{Committed: 4, Lease: Lease{Start: 5, End: 9, Attempts: 1}}, 9,
			State{Committed: 4, Lease: Lease{ID: id(7), WorkerID: "w", Start: 5, End: 9, ExpiresAtMicros: exp, Attempts: 2}}},
		{"spec 4.5: redelivery of the rest of a partly committed span is still the same span",
			State{Committed: 6, Retries: 2, Lease: Lease{Start: 5, End: 9, Attempts: 3}}, 9,
			State{Committed: 6, Retries: 2, Lease: Lease{ID: id(7), WorkerID: "w", Start: 7, End: 9, ExpiresAtMicros: exp, Attempts: 4}}},
		{"spec 4.5: a claim past the old span starts fresh (attempt 1, retries 0)",
			State{Committed: 9, Retries: 2, Lease: Lease{Start: 5, End: 9, Attempts: 3}}, 15,
			State{Committed: 9, Lease: Lease{ID: id(7), WorkerID: "w", Start: 10, End: 15, ExpiresAtMicros: exp, Attempts: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			Grant(&s, id(7), "w", c.end, exp)
			assert.Equal(t, c.want, s)
		})
	}
}

func TestAutoAck(t *testing.T) {
	cases := []struct {
		name string
		s    State
		end  uint64
		want State
	}{
		{"seed 000 autoAck: commit the cursor, no lease", State{Committed: 2}, 8, State{Committed: 8}},
		{"spec 4.6 step 4: never backwards", State{Committed: 10}, 8, State{Committed: 10}},
		{"spec 3.10: an expired lease's remembered span is dropped", State{Committed: 2, Retries: 1, Lease: Lease{ID: id(1), Start: 3, End: 5, Attempts: 2}}, 8, State{Committed: 8}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			AutoAck(&s, c.end)
			assert.Equal(t, c.want, s)
		})
	}
}

func TestExtend(t *testing.T) {
	now := 1000 * sec
	cases := []struct {
		name    string
		expires int64
		seconds int64
		renewed bool
		want    int64
	}{
		{"spec 6: a live lease gets now+seconds", now + 10*sec, 120, true, now + 120*sec},
		{"spec 6: never shortens a lease", now + 500*sec, 120, true, now + 500*sec},
		{"spec 6 / seed 000: no seconds means 60", now + 10*sec, 0, true, now + 60*sec},
		{"spec 6: a non-positive value means 60", now + 10*sec, -3, true, now + 60*sec},
		{"spec 6: never revives an expired lease", now, 120, false, now},
		{"MaxLeaseSeconds: a renewal past the cap is capped (no overflow, no year > 9999)", now + 10*sec, 99999999999999, true, now + MaxLeaseSeconds*sec},
		{"MaxLeaseSeconds: int64 max seconds renews to the cap", now + 10*sec, 9223372036854775807, true, now + MaxLeaseSeconds*sec},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := State{Lease: Lease{ID: id(1), Start: 1, End: 2, ExpiresAtMicros: c.expires, Attempts: 1}}
			assert.Equal(t, c.renewed, Extend(&s, now, c.seconds))
			assert.Equal(t, c.want, s.Lease.ExpiresAtMicros)
		})
	}
	t.Run("spec 6: an unknown lease renews nothing", func(t *testing.T) {
		s := State{Committed: 1}
		assert.False(t, Extend(&s, now, 60))
		assert.Equal(t, State{Committed: 1}, s)
	})
}

func TestParseStatus(t *testing.T) {
	cases := []struct {
		in   string
		want Status
	}{
		{"", StatusCompleted}, {"completed", StatusCompleted}, {"success", StatusCompleted},
		{"failed", StatusFailed}, {"retry", StatusRetry}, {"dlq", StatusDLQ},
		{"COMPLETED", StatusInvalid}, {"bogus", StatusInvalid},
	}
	for _, c := range cases {
		t.Run("spec 4.3 status "+c.in, func(t *testing.T) {
			assert.Equal(t, c.want, ParseStatus(c.in))
		})
	}
}

// TestRetryLimitOneDeliversTwiceThenDLQ walks the JS test testDLQ through
// Grant and ApplyAcks (spec 4.5): retryLimit 1, one message always nacked:
// delivery 1 → retry, delivery 2 → DLQ.
func TestRetryLimitOneDeliversTwiceThenDLQ(t *testing.T) {
	now := 1000 * sec
	var s State
	Grant(&s, id(1), "w", 1, now+60*sec)
	out, _, _ := ApplyAcks(&s, []Ack{{Offset: 1, LeaseID: id(1), HasLeaseID: true, Status: StatusFailed}}, 1, now, false)
	require.Equal(t, []Outcome{{Success: true, LeaseReleased: true}}, out, "delivery 1 → retry")
	assert.Equal(t, uint32(1), s.Retries)
	assert.True(t, CanClaim(s, now))

	Grant(&s, id(2), "w", 1, now+60*sec)
	assert.Equal(t, uint32(2), s.Lease.Attempts, "the redelivery is attempt 2")
	out, _, _ = ApplyAcks(&s, []Ack{{Offset: 1, LeaseID: id(2), HasLeaseID: true, Status: StatusFailed}}, 1, now, false)
	require.Equal(t, []Outcome{{Success: true, LeaseReleased: true, DLQ: true}}, out, "delivery 2 → DLQ")
	assert.Equal(t, State{Committed: 1}, s, "span fully committed by the DLQ move: counter reset (11 #14)")
}
