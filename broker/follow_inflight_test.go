package broker

import (
	"testing"
	"time"

	"github.com/combmq/comb/clock/clocktest"
	"github.com/stretchr/testify/require"
)

// markInflight puts lsn in the in-flight set, as appendInflight does.
func markInflight(b *Broker, lsn uint64) {
	b.flush.stateMu.Lock()
	if b.flush.inflight == nil {
		b.flush.inflight = map[uint64]int{}
	}
	b.flush.inflight[lsn]++
	b.flush.stateMu.Unlock()
}

// awaitTimer waits (on fk.Changed) until n timers are armed on fk.
func awaitTimer(t *testing.T, fk *clocktest.Fake, n int) []time.Time {
	t.Helper()
	giveUp := time.After(30 * time.Second)
	for {
		changed := fk.Changed()
		if p := fk.Pending(); len(p) == n {
			return p
		}
		select {
		case <-changed:
		case <-giveUp:
			t.Fatalf("%d timers armed, want %d", len(fk.Pending()), n)
		}
	}
}

// Flush before a raft snapshot waits for the transactions in flight up to
// the applied LSN (follow_apply.go): it wakes when the last of them is
// applied, not on a polling tick, and stops waiting at its bound on the
// broker's clock.
func TestWaitInflightThrough(t *testing.T) {
	t.Run("an entry above lsn does not hold it", func(t *testing.T) {
		b, fk := openOnFakeClock(t)
		markInflight(b, 9)
		require.NoError(t, b.waitInflightThrough(5, time.Minute))
		require.Empty(t, fk.Pending(), "nothing to wait for, no timer")
	})
	t.Run("wakes when the entry is applied", func(t *testing.T) {
		b, fk := openOnFakeClock(t)
		markInflight(b, 4)
		markInflight(b, 5)
		done := make(chan error, 1)
		go func() { done <- b.waitInflightThrough(5, time.Minute) }()
		require.Equal(t, []time.Time{fk.Now().Add(time.Minute)}, awaitTimer(t, fk, 1), "one timer, at the bound")
		b.txApplied(4)
		b.txApplied(5)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the wait did not end when its entries were applied")
		}
		require.Empty(t, fk.Pending(), "the bound's timer is stopped")
	})
	t.Run("gives up at its bound", func(t *testing.T) {
		b, fk := openOnFakeClock(t)
		markInflight(b, 5)
		done := make(chan error, 1)
		go func() { done <- b.waitInflightThrough(5, 5*time.Second) }()
		awaitTimer(t, fk, 1)
		fk.Advance(5 * time.Second)
		select {
		case err := <-done:
			require.EqualError(t, err, "broker: entry 5 still being applied after 5s; snapshot later")
		case <-time.After(30 * time.Second):
			t.Fatal("the wait did not end at its bound")
		}
	})
}
