package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// wakeGate is what parked long-polls of one queue wait on (spec 3.6, seed 000
// "Long-poll"). A waiter takes the current channel before it checks for work;
// a wake closes that channel and installs a fresh one, so a push that lands
// between the check and the wait is never missed.
type wakeGate struct {
	mu       sync.Mutex
	ch       chan struct{}
	waiters  atomic.Int32 // parked (or about to park) pops; pushes skip gates with none
	pending  atomic.Bool  // queued on the waker for the next tick
	lastFire time.Time    // under waker.mu: when the waker last fired this gate
}

func newWakeGate() *wakeGate { return &wakeGate{ch: make(chan struct{})} }

// arm registers a waiter and returns the channel the next wake closes. The
// caller must call disarm when it stops waiting.
func (g *wakeGate) arm() <-chan struct{} {
	g.waiters.Add(1)
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	return ch
}

func (g *wakeGate) disarm() { g.waiters.Add(-1) }

func (g *wakeGate) fire() {
	g.mu.Lock()
	close(g.ch)
	g.ch = make(chan struct{})
	g.mu.Unlock()
}

// waker coalesces wake-ups: a push marks its queue's gate, and the waker
// fires a marked gate at once if the gate last fired at least WakeTick (5 ms)
// ago, else when that tick has passed. A hot queue therefore costs at most
// one wake-up per tick however many pushes land (seed 000: "those local wakes
// are coalesced onto a 5 ms tick"), while a push to a quiet queue wakes its
// parked pops without waiting out a tick (issue 6: long-poll wake p99 ≤ 5 ms).
type waker struct {
	mu      sync.Mutex
	pending []*wakeGate
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	tick    time.Duration
}

func newWaker(tick time.Duration) *waker {
	w := &waker{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), tick: tick}
	go w.loop()
	return w
}

// signal marks g for the next tick. Cheap when nobody waits on g: the
// waiter count is read after the pushed messages became visible, and a
// waiter raises it before it checks for work, so one of the two sees the
// other.
func (w *waker) signal(g *wakeGate) {
	if g.waiters.Load() == 0 || !g.pending.CompareAndSwap(false, true) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if !now.Before(g.lastFire.Add(w.tick)) {
		// Due now: fire here rather than hand the gate to the waker
		// goroutine, which on a busy machine may wait for a CPU first.
		g.lastFire = now
		w.mu.Unlock()
		g.pending.Store(false)
		g.fire()
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
func (w *waker) loop() {
	defer close(w.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	var due []*wakeGate
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
			g.fire()
		}
		clear(due)
		t.Stop()
		if !next.IsZero() {
			t.Reset(time.Until(next))
		}
	}
}

// takeDue moves the pending gates whose tick has passed into due (stamping
// them fired at now) and returns when the earliest remaining one is due
// (zero when none remain).
func (w *waker) takeDue(due []*wakeGate, now time.Time) ([]*wakeGate, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Time
	keep := w.pending[:0]
	for _, g := range w.pending {
		at := g.lastFire.Add(w.tick)
		if !now.Before(at) {
			g.lastFire = now
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

func (w *waker) close() {
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

// backoff is the re-check schedule of a parked pop with no wake-ups (spec
// 3.6): 100 ms for the first 3 checks, then doubling, capped at 1000 ms; a
// wake resets it.
type backoff struct{ checks int }

func (b *backoff) next() time.Duration {
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

func (b *backoff) reset() { b.checks = 0 }
