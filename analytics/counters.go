package analytics

import "sync/atomic"

// Counters are one queue's tallies for the minute being counted. The push,
// pop and ack paths add to them with atomic adds (no lock, no allocation);
// Store.Tick takes them at the minute boundary. Every method is safe on a nil
// *Counters and then does nothing: that is how counting is turned off.
type Counters struct {
	ingested, popped, processed, errors atomic.Uint64
	lagSumMs, lagMaxMs, deadLettered    atomic.Uint64
	_                                   [8]byte // keep two queues' counters off one cache line
}

// Ingested counts n messages stored by a push.
func (c *Counters) Ingested(n int) {
	if c != nil && n > 0 {
		c.ingested.Add(uint64(n))
	}
}

// Popped counts n messages handed out by a pop; lagSumMs is the sum of their
// ages at the pop (ms) and lagMaxMs the largest.
func (c *Counters) Popped(n int, lagSumMs, lagMaxMs uint64) {
	if c == nil || n <= 0 {
		return
	}
	c.popped.Add(uint64(n))
	c.lagSumMs.Add(lagSumMs)
	for {
		old := c.lagMaxMs.Load()
		if lagMaxMs <= old || c.lagMaxMs.CompareAndSwap(old, lagMaxMs) {
			return
		}
	}
}

// Processed counts n messages completed (an ack of status completed, or a
// pop with autoAck).
func (c *Counters) Processed(n int) {
	if c != nil && n > 0 {
		c.processed.Add(uint64(n))
	}
}

// Errors counts n acks of status failed (retried or dead-lettered).
func (c *Counters) Errors(n int) {
	if c != nil && n > 0 {
		c.errors.Add(uint64(n))
	}
}

// DeadLettered counts n messages moved to the queue's dead-letter queue.
func (c *Counters) DeadLettered(n int) {
	if c != nil && n > 0 {
		c.deadLettered.Add(uint64(n))
	}
}

// take returns the tallies and zeroes them. An add racing with take lands in
// this minute or the next one, never nowhere.
func (c *Counters) take() Point {
	return Point{
		Ingested: c.ingested.Swap(0), Popped: c.popped.Swap(0), Processed: c.processed.Swap(0),
		Errors: c.errors.Swap(0), LagSumMs: c.lagSumMs.Swap(0), LagMaxMs: c.lagMaxMs.Swap(0),
		DeadLettered: c.deadLettered.Swap(0),
	}
}

// peek returns the tallies without taking them (the minute in progress).
func (c *Counters) peek() Point {
	return Point{
		Ingested: c.ingested.Load(), Popped: c.popped.Load(), Processed: c.processed.Load(),
		Errors: c.errors.Load(), LagSumMs: c.lagSumMs.Load(), LagMaxMs: c.lagMaxMs.Load(),
		DeadLettered: c.deadLettered.Load(),
	}
}
