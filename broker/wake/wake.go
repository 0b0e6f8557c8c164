package wake

import (
	"sync"
	"sync/atomic"
	"time"
)

// Gate is what parked long-polls of one queue wait on (spec 3.6, seed 000
// "Long-poll"). A waiter takes the current channel before it checks for work;
// a wake closes that channel and installs a fresh one, so a push that lands
// between the check and the wait is never missed.
type Gate struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiters atomic.Int32 // parked (or about to park) pops; pushes skip gates with none
	pending atomic.Bool  // queued on the Waker for the next tick
	// Under Waker.mu: when the gate's current tick window began (its first
	// fire in it) and how many times it fired in that window.
	windowStart time.Time
	fired       int
}

// burstPerTick is how many times a gate fires at once within one tick window
// before further pushes wait for the window's end. One (the strict tick) held
// a push that landed within 5 ms of the previous wake of its queue for up to
// the rest of the tick: on a busy box an open-loop producer catching up sends
// two messages to one queue that close, and the second one's wake latency was
// the tail (BenchmarkLongPollWake, 16 queues: wake p99 1.9-6.9 ms against
// 0.4-0.5 ms with the tick off). Two keep the bound (at most 2 wake-ups per
// tick, 400 a second for a 5 ms tick) and let such a pair through.
const burstPerTick = 2

// mayFireLocked reports whether g may fire at now, and if so counts the fire.
// The caller holds Waker.mu.
func (g *Gate) mayFireLocked(now time.Time, tick time.Duration) bool {
	if !now.Before(g.windowStart.Add(tick)) {
		g.windowStart, g.fired = now, 1
		return true
	}
	if g.fired < burstPerTick {
		g.fired++
		return true
	}
	return false
}

// NewGate returns a gate with no waiters.
func NewGate() *Gate { return &Gate{ch: make(chan struct{})} }

// Arm registers a waiter and returns the channel the next wake closes. The
// caller must call Disarm when it stops waiting.
func (g *Gate) Arm() <-chan struct{} {
	g.waiters.Add(1)
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	return ch
}

// Disarm unregisters a waiter that Arm registered.
func (g *Gate) Disarm() { g.waiters.Add(-1) }

// Waiters is the number of armed waiters (parked or about to park).
func (g *Gate) Waiters() int32 { return g.waiters.Load() }

// Fire wakes every waiter armed now, at once; Waker.Signal is the coalesced
// form a push uses.
func (g *Gate) Fire() {
	g.mu.Lock()
	close(g.ch)
	g.ch = make(chan struct{})
	g.mu.Unlock()
}

// Waker coalesces wake-ups: a push marks its queue's gate, and the Waker
// fires a marked gate at once while the gate fired fewer than burstPerTick
// times in its current tick window (5 ms from its first fire in it), else when
// that window has passed. A hot queue therefore costs at most burstPerTick
// wake-ups per tick however many pushes land (seed 000: "those local wakes
// are coalesced onto a 5 ms tick"), while a push to a quiet queue wakes its
// parked pops without waiting out a tick (issue 6: long-poll wake p99 ≤ 5 ms).
type Waker struct {
	mu      sync.Mutex
	pending []*Gate
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	tick    time.Duration
}

// NewWaker starts a waker that fires a gate at most once per tick; Close
// stops it.
func NewWaker(tick time.Duration) *Waker {
	w := &Waker{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), tick: tick}
	go w.loop()
	return w
}

// Signal marks g for the next tick. Cheap when nobody waits on g: the
// waiter count is read after the pushed messages became visible, and a
// waiter raises it before it checks for work, so one of the two sees the
// other.
func (w *Waker) Signal(g *Gate) {
	if g.waiters.Load() == 0 || !g.pending.CompareAndSwap(false, true) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if g.mayFireLocked(now, w.tick) {
		// Due now: fire here rather than hand the gate to the Waker
		// goroutine, which on a busy machine may wait for a CPU first.
		w.mu.Unlock()
		g.pending.Store(false)
		g.Fire()
		return
	}
	w.pending = append(w.pending, g)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// loop sleeps until a signal arrives or the earliest held gate is due, then
// fires every due gate; idle brokers do not tick.
func (w *Waker) loop() {
	defer close(w.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	var due []*Gate
	for {
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-w.kick:
		case <-t.C:
		}
		var next time.Time
		due, next = w.takeDue(due[:0], time.Now())
		for _, g := range due {
			g.pending.Store(false) // a push from now on queues the gate again
			g.Fire()
		}
		clear(due)
		t.Stop()
		if !next.IsZero() {
			t.Reset(time.Until(next))
		}
	}
}

// takeDue moves the pending gates whose tick window has passed into due
// (each starting a new window at now) and returns when the earliest
// remaining one is due (zero when none remain).
func (w *Waker) takeDue(due []*Gate, now time.Time) ([]*Gate, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Time
	keep := w.pending[:0]
	for _, g := range w.pending {
		at := g.windowStart.Add(w.tick)
		if g.mayFireLocked(now, w.tick) {
			due = append(due, g)
			continue
		}
		keep = append(keep, g)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	clear(w.pending[len(keep):])
	w.pending = keep
	return due, next
}

// Close stops the waker's goroutine; gates still pending are not fired. A
// nil Waker is closed already.
func (w *Waker) Close() {
	if w == nil {
		return
	}
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Backoff is the re-check schedule of a parked pop with no wake-ups (spec
// 3.6): 100 ms for the first 3 checks, then doubling, capped at 1000 ms; a
// wake resets it.
type Backoff struct{ checks int }

// Next counts one more empty check and returns how long to wait before the
// next one.
func (b *Backoff) Next() time.Duration {
	b.checks++
	if b.checks <= 3 {
		return 100 * time.Millisecond
	}
	d := 100 * time.Millisecond << (b.checks - 3)
	if d > time.Second || d <= 0 {
		d = time.Second
	}
	return d
}

// Reset starts the schedule again (after a wake).
func (b *Backoff) Reset() { b.checks = 0 }
