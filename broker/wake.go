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
	mu      sync.Mutex
	ch      chan struct{}
	waiters atomic.Int32 // parked (or about to park) pops; pushes skip gates with none
	pending atomic.Bool  // queued on the waker for the next tick
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

// waker coalesces wake-ups: a push marks its queue's gate, and a tick every
// WakeTick (5 ms) fires every marked gate once, so a hot queue costs at most
// one wake-up per tick however many pushes land (seed 000: "those local wakes
// are coalesced onto a 5 ms tick").
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
	w.mu.Lock()
	w.pending = append(w.pending, g)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// loop sleeps until a signal arrives, then fires the marked gates at the end
// of the current tick window; idle brokers do not tick.
func (w *waker) loop() {
	defer close(w.done)
	var batch []*wakeGate
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
		}
		t := time.NewTimer(w.tick)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
		w.mu.Lock()
		batch, w.pending = w.pending, batch[:0]
		w.mu.Unlock()
		for _, g := range batch {
			g.pending.Store(false)
			g.fire()
		}
		clear(batch)
	}
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
