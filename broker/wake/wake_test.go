package wake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffSchedule(t *testing.T) {
	var b Backoff
	var got []time.Duration
	for i := 0; i < 8; i++ {
		got = append(got, b.Next())
	}
	ms := time.Millisecond
	// spec 3.6: 100 ms for the first 3 empty checks, then longer, capped at 1000 ms.
	assert.Equal(t, []time.Duration{100 * ms, 100 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}, got)
	b.Reset()
	assert.Equal(t, 100*ms, b.Next(), "a wake resets the Backoff")
}

func TestWakeGateWakesArmedWaiter(t *testing.T) {
	w := NewWaker(time.Millisecond)
	defer w.Close()
	g := NewGate()
	ch := g.Arm()
	defer g.Disarm()
	w.Signal(g)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("armed waiter was not woken")
	}
}

func TestWakeGateSignalsCoalesce(t *testing.T) {
	w := NewWaker(20 * time.Millisecond)
	defer w.Close()
	g := NewGate()
	ch := g.Arm()
	defer g.Disarm()
	for i := 0; i < 100; i++ {
		w.Signal(g)
	}
	w.mu.Lock()
	queued := len(w.pending)
	w.mu.Unlock()
	require.LessOrEqual(t, queued, 1, "100 pushes within one tick queue the gate once")
	<-ch
}

func TestWakeGateWithoutWaitersIsSkipped(t *testing.T) {
	w := NewWaker(time.Millisecond)
	defer w.Close()
	g := NewGate()
	before := g.ch
	w.Signal(g)
	assert.True(t, before == g.ch, "a gate nobody waits on is not fired")
	assert.False(t, g.pending.Load(), "a gate nobody waits on is not queued")
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Empty(t, w.pending, "a gate nobody waits on is not queued")
}

func TestWakeGateQuietGateFiresWithoutWaitingATick(t *testing.T) {
	w := NewWaker(time.Hour) // a tick this long would fail the test if the first wake waited for it
	defer w.Close()
	g := NewGate()
	ch := g.Arm()
	defer g.Disarm()
	w.Signal(g)
	select {
	case <-ch:
	default:
		t.Fatal("a gate that never fired was not fired by the push's own signal")
	}

	// Within the tick of that fire, a second push still fires at once
	// (burstPerTick = 2)...
	ch2 := g.Arm()
	defer g.Disarm()
	w.Signal(g)
	select {
	case <-ch2:
	default:
		t.Fatal("the second signal within a tick was held")
	}
	// ...and a third is held until the tick has passed.
	ch3 := g.Arm()
	defer g.Disarm()
	w.Signal(g)
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == 1
	}, 5*time.Second, time.Millisecond, "the third signal is held for the tick")
	select {
	case <-ch3:
		t.Fatal("a gate fired three times within one tick")
	default:
	}
}
