package clocktest

import (
	"testing"
	"time"

	"github.com/combmq/comb/clock"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)

// fired reports whether tm fired, and at which reading, without waiting: a Fake fires a timer
// inside Advance, so by the time Advance returns its channel holds the firing.
func fired(tm clock.Timer) (time.Time, bool) {
	select {
	case at := <-tm.C():
		return at, true
	default:
		return time.Time{}, false
	}
}

// A timer fires when the clock reaches its due time, not before, and sends that due time.
func TestFakeTimerFiresAtItsDueTime(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(100 * time.Millisecond)
	require.Equal(t, []time.Time{t0.Add(100 * time.Millisecond)}, f.Pending())
	f.Advance(99 * time.Millisecond)
	_, ok := fired(tm)
	require.False(t, ok, "not due yet")
	f.Advance(time.Millisecond)
	at, ok := fired(tm)
	require.True(t, ok)
	require.Equal(t, t0.Add(100*time.Millisecond), at)
	require.Empty(t, f.Pending())
	require.False(t, tm.Stop(), "a fired timer cannot be stopped")
}

// One Advance past several due times fires every timer due, each with its own due time.
func TestFakeAdvanceFiresEveryDueTimer(t *testing.T) {
	f := NewFake(t0)
	late, early, never := f.NewTimer(2*time.Second), f.NewTimer(time.Second), f.NewTimer(time.Hour)
	require.Equal(t, []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(time.Hour)}, f.Pending())
	f.Set(t0.Add(5 * time.Second))
	at, ok := fired(early)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), at)
	at, ok = fired(late)
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), at)
	_, ok = fired(never)
	require.False(t, ok)
	require.Equal(t, []time.Time{t0.Add(time.Hour)}, f.Pending())
	require.Equal(t, t0.Add(5*time.Second), f.Now())
	f.Set(t0) // never backwards
	require.Equal(t, t0.Add(5*time.Second), f.Now())
}

// A stopped timer never fires; a timer of zero or negative duration fires at once.
func TestFakeStopAndImmediateTimers(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	require.True(t, tm.Stop())
	require.False(t, tm.Stop())
	require.Empty(t, f.Pending())
	f.Advance(time.Hour)
	_, ok := fired(tm)
	require.False(t, ok)

	now := f.NewTimer(0)
	at, ok := fired(now)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Hour), at)
	require.Empty(t, f.Pending(), "an immediate timer is never pending")
}

// Changed is closed when a timer is armed, fired or stopped, so a test can wait on a channel
// for the code under test to arm its next timer.
func TestFakeChangedSignalsEveryChange(t *testing.T) {
	f := NewFake(t0)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := f.Changed()
	require.False(t, closed(ch))
	tm := f.NewTimer(time.Second)
	require.True(t, closed(ch), "armed")
	ch = f.Changed()
	f.Advance(time.Millisecond)
	require.False(t, closed(ch), "nothing fired")
	tm.Stop()
	require.True(t, closed(ch), "stopped")
	ch = f.Changed()
	f.NewTimer(time.Second)
	<-ch
	ch = f.Changed()
	f.Advance(time.Second)
	require.True(t, closed(ch), "fired")
}

// clock.System's timers are real ones.
func TestSystemTimerFires(t *testing.T) {
	tm := clock.System.NewTimer(time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("a 1 ms timer did not fire")
	}
	require.False(t, tm.Stop())
	require.False(t, clock.System.Now().IsZero())
}
