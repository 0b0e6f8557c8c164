package clock

import "time"

// Clock is a source of wall time and of timers that run on the same time.
type Clock interface {
	// Now is the current time on this clock.
	Now() time.Time
	// NewTimer returns a timer whose channel receives once, when d has passed on this clock
	// (at once for d <= 0).
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock (the subset of *time.Timer the broker uses).
type Timer interface {
	// C is the channel the timer's firing is sent on (capacity 1).
	C() <-chan time.Time
	// Stop prevents the timer from firing; false means it had fired or been stopped already.
	Stop() bool
}

// System is the real clock: time.Now and time.NewTimer.
var System Clock = system{}

type system struct{}

func (system) Now() time.Time { return time.Now() }

func (system) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }
