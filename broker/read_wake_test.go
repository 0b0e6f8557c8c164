package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffSchedule(t *testing.T) {
	var b backoff
	var got []time.Duration
	for i := 0; i < 8; i++ {
		got = append(got, b.next())
	}
	ms := time.Millisecond
	// spec 3.6: 100 ms for the first 3 empty checks, then longer, capped at 1000 ms.
	assert.Equal(t, []time.Duration{100 * ms, 100 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}, got)
	b.reset()
	assert.Equal(t, 100*ms, b.next(), "a wake resets the backoff")
}

func TestWakeGateWakesArmedWaiter(t *testing.T) {
	w := newWaker(time.Millisecond)
	defer w.close()
	g := newWakeGate()
	ch := g.arm()
	defer g.disarm()
	w.signal(g)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("armed waiter was not woken")
	}
}

func TestWakeGateSignalsCoalesce(t *testing.T) {
	w := newWaker(20 * time.Millisecond)
	defer w.close()
	g := newWakeGate()
	ch := g.arm()
	defer g.disarm()
	for i := 0; i < 100; i++ {
		w.signal(g)
	}
	w.mu.Lock()
	queued := len(w.pending)
	w.mu.Unlock()
	require.LessOrEqual(t, queued, 1, "100 pushes within one tick queue the gate once")
	<-ch
}

func TestWakeGateWithoutWaitersIsSkipped(t *testing.T) {
	w := newWaker(time.Millisecond)
	defer w.close()
	g := newWakeGate()
	w.signal(g)
	assert.False(t, g.pending.Load(), "a gate nobody waits on is not queued")
}

func TestWakeGateQuietGateFiresWithoutWaitingATick(t *testing.T) {
	w := newWaker(time.Hour) // a tick this long would fail the test if the first wake waited for it
	defer w.close()
	g := newWakeGate()
	ch := g.arm()
	defer g.disarm()
	w.signal(g)
	select {
	case <-ch:
	default:
		t.Fatal("a gate that never fired was not fired by the push's own signal")
	}

	// Within the tick of that fire, a new push is held until the tick has passed.
	ch2 := g.arm()
	defer g.disarm()
	w.signal(g)
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == 1
	}, 5*time.Second, time.Millisecond, "the second signal is held for the tick")
	select {
	case <-ch2:
		t.Fatal("a gate fired twice within one tick")
	default:
	}
}
