package broker

import (
	"context"
	"time"

	"github.com/combmq/comb/broker/wake"
)

// longPoll is a pop with wait=true (spec 3.6): pass, park, pass again, until
// something is claimed or the deadline passes. The gate is armed before each
// pass and stays armed (its waiter count raised) until the park ends: a push
// skips gates with no waiters, so disarming before parking would let every
// push in between pass the pop by and leave it to its backoff re-check.
//
// The deadline and every park run on b.waits (Config.Clock), so a test on a
// clocktest.Fake sees each wait as a timer due at an exact instant.
func (b *Broker) longPoll(ctx context.Context, pc *popCtx) (PopResult, error) {
	deadline := b.waits.Now().Add(pc.req.Timeout)
	gate := b.popGate(pc)
	var bo wake.Backoff
	minWaitDone := false
	for parked := false; ; parked = true {
		if parked && !stillWanted(ctx) {
			return PopResult{}, nil
		}
		ch := gate.Arm()
		res, err := b.popOnce(pc, !minWaitDone)
		if err != nil || len(res.Messages) > 0 {
			gate.Disarm()
			return b.popAnswer(res, err)
		}
		if res.minWait > 0 {
			// minPopWaitTime (seed 000): some but too few messages; wait once
			// for more, then claim whatever is there.
			gate.Disarm()
			minWaitDone = true
			if !b.park(ctx, gate, min(res.minWait, deadline.Sub(b.waits.Now()))) {
				return PopResult{}, nil
			}
			continue
		}
		if !pc.discovery && gate == b.anyGate {
			// The queue may have been created since: wait on its own gate.
			if g := b.popGate(pc); g != gate {
				gate.Disarm()
				gate = g
				continue
			}
		}
		wait := parkTime(&bo, res.nextDue, pc.nowMicros, deadline.Sub(b.waits.Now()))
		if wait <= 0 {
			gate.Disarm()
			return PopResult{}, nil
		}
		b.stats.parkedPops.Add(1)
		woke, stop := b.parkOn(ctx, ch, wait)
		b.stats.parkedPops.Add(-1)
		gate.Disarm()
		if stop {
			return PopResult{}, nil
		}
		if woke {
			bo.Reset()
		}
		if !b.waits.Now().Before(deadline) {
			// One last look: the wake may have come right at the deadline.
			if !stillWanted(ctx) {
				return PopResult{}, nil
			}
			return b.popAnswer(b.popOnce(pc, false))
		}
	}
}

// popGate is the wake gate a pop parks on: its queue's, or the one every push
// signals for a discovery pop or a queue that does not exist yet.
func (b *Broker) popGate(pc *popCtx) *wake.Gate {
	if !pc.discovery {
		if q := b.lookupQueue(pc.req.Queue); q != nil {
			return q.gate
		}
	}
	return b.anyGate
}

// parkTime is how long a pop that found nothing parks: its next backoff step,
// cut to what is left until the deadline (left) and to nextDue (µs, 0 =
// none), when the first held-back message becomes visible (spec 3.9), at
// least 1 ms so that it never spins. Zero or less means the deadline has
// passed.
func parkTime(bo *wake.Backoff, nextDue, nowMicros int64, left time.Duration) time.Duration {
	wait := min(bo.Next(), left)
	if wait <= 0 {
		return wait
	}
	if nextDue > 0 {
		wait = min(wait, max(time.Duration(nextDue-nowMicros)*time.Microsecond, time.Millisecond))
	}
	return wait
}

// parkOn waits for ch, d, ctx or Close. woke: ch fired; stop: give up now.
func (b *Broker) parkOn(ctx context.Context, ch <-chan struct{}, d time.Duration) (woke, stop bool) {
	t := b.waits.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true, false
	case <-t.C():
		return false, false
	case <-ctx.Done():
		return false, true
	case <-b.closing:
		return false, true
	}
}

// park waits up to d for a wake of gate; false means stop (ctx or Close).
func (b *Broker) park(ctx context.Context, gate *wake.Gate, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	ch := gate.Arm()
	defer gate.Disarm()
	b.stats.parkedPops.Add(1)
	defer b.stats.parkedPops.Add(-1)
	_, stop := b.parkOn(ctx, ch, d)
	return !stop
}
