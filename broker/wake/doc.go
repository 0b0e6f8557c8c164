// Package wake owns the long-poll wake gates of the broker's read path (spec
// 3.6, seed 000 "Long-poll"): a Gate per queue that parked pops wait on, the
// Waker that coalesces pushes' wake-ups onto a tick (5 ms by default), and the
// Backoff schedule of a parked pop's re-checks.
//
// It must not know about queues, partitions, messages or the broker: a push
// calls Waker.Signal on its queue's gate, a pop calls Gate.Arm before it looks
// for work and parks on the channel it got. Arming before looking is what
// makes a push between the look and the park impossible to miss.
package wake
