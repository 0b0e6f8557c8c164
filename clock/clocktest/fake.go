package clocktest

import (
	"slices"
	"sync"
	"time"

	"github.com/combmq/comb/clock"
)

// Fake is a clock.Clock that moves only when told (Advance, Set): its timers fire when the clock
// reaches their due time, never on their own. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer  // pending, in no particular order
	changed chan struct{} // closed (and replaced) whenever timers changes
}

// NewFake returns a Fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now is the fake's current reading.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer due d from the current reading; d <= 0 fires at once.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	t.at = f.now.Add(d)
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	f.changedLocked()
	return t
}

// Advance moves the clock forward by d and fires every timer due by then.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the clock to t (never backwards: an earlier t is ignored) and fires every timer due
// by then.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.setLocked(t)
	}
}

// setLocked fires the due timers in order of their due time, each with its due time as the
// reading sent (what a real timer that fired on time would send). The caller holds f.mu.
func (f *Fake) setLocked(t time.Time) {
	f.now = t
	slices.SortStableFunc(f.timers, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	n := 0
	for _, tm := range f.timers {
		if tm.at.After(t) {
			break
		}
		tm.c <- tm.at // capacity 1, sent once: never blocks
		n++
	}
	if n > 0 {
		clear(f.timers[:n])
		f.timers = f.timers[n:]
		f.changedLocked()
	}
}

// Pending is the due times of the timers armed and not yet fired or stopped, earliest first.
func (f *Fake) Pending() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := make([]time.Time, len(f.timers))
	for i, t := range f.timers {
		at[i] = t.at
	}
	slices.SortFunc(at, time.Time.Compare)
	return at
}

// Changed returns a channel closed at the next change of Pending (a timer armed, fired or
// stopped). Take it before reading Pending, so a change in between is not missed.
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *Fake) changedLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	f  *Fake
	at time.Time // due time
	c  chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.timers, t)
	if i < 0 {
		return false
	}
	f.timers = slices.Delete(f.timers, i, i+1)
	f.changedLocked()
	return true
}
