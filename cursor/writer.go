package cursor

import (
	"time"

	"github.com/combmq/comb/lease"
)

// writeLoop is the single writer: it writes a checkpoint at once when a Wait
// caller needs one, on every CheckpointInterval tick while anything changed
// (no sooner than retryDelay after a failed one), and a final one on Close.
func (e *Engine) writeLoop() {
	defer close(e.done)
	t := time.NewTicker(e.opts.CheckpointInterval)
	defer t.Stop()
	var retryAt time.Time
	for {
		final := false
		select {
		case <-e.kick:
		case now := <-t.C:
			if !e.changed.Load() || now.Before(retryAt) {
				continue
			}
		case <-e.stop:
			if e.abandoned.Load() {
				return
			}
			final = true
		}
		for {
			ok := e.checkpoint()
			retryAt = time.Time{}
			if !ok {
				retryAt = time.Now().Add(retryDelay)
			}
			e.mu.Lock()
			// A caller that asked while this checkpoint ran either kicked
			// (and a failed round leaves that kick for the next one) or is
			// served by this loop.
			again := !final && ok && e.wantGen >= e.nextGen
			e.mu.Unlock()
			if !again {
				break
			}
		}
		if final {
			return
		}
	}
}

// collector walks the changes of one generation across the bodies it takes.
type collector struct {
	shard int  // next shard to collect
	subs  bool // subscriptions collected
}

// checkpoint collects every change since the previous collection into one
// checkpoint body (several, past checkpointSplitBytes), hands it to the Log
// and waits until it is durable, then releases the Wait callers of its
// generation. It reports whether the generation is durable.
//
// On failure every change of the generation that is not durable is handed
// back (marked changed again) for the next attempt, and the generation's
// waiters get a *CheckpointError, sticky when the Log says the error is not
// retryable.
func (e *Engine) checkpoint() bool {
	e.mu.Lock()
	if e.err != nil {
		e.mu.Unlock()
		return false
	}
	gen := e.nextGen
	e.nextGen++
	// Cleared before collecting: a change that lands after this point either
	// is collected below or sets the flag again for the next generation.
	e.changed.Store(false)
	e.mu.Unlock()

	err := e.writeGeneration()

	e.mu.Lock()
	if err == nil {
		e.durableGen = gen
		e.failing = false
	} else {
		cerr := &CheckpointError{Err: err, Sticky: !e.opts.Log.Retryable(err)}
		e.failedGen, e.failErr = gen, cerr
		if cerr.Sticky {
			e.err = cerr
			e.wakeAllLocked() // the next generation's callers fail too
		}
		if !e.failing {
			e.failing, e.failSince = true, time.Now()
		}
	}
	// Only gen's callers: the next generation's wait for its own checkpoint
	// (a caller that asked for it kicked the writer).
	e.conds[gen%2].Broadcast()
	e.mu.Unlock()
	return err == nil
}

// writeGeneration hands the changes collected now to the Log as one or more
// checkpoint bodies, each waited for before the next is collected.
//
// A body is appended even with no entries when a Snapshot is waiting for
// the LSN of a checkpoint collected after it began reading (an idle engine
// must still let its replayFrom advance; see Snapshot).
func (e *Engine) writeGeneration() error {
	enc := e.enc
	var c collector
	for {
		enc.reset()
		enc.beginCheckpoint(e.nowMicros()) // before the states are read: remaining durations err long, never short
		more := e.collect(&c, enc)
		e.mu.Lock()
		mark := e.snapActive && e.snapFrom == 0
		e.mu.Unlock()
		if enc.entries == 0 && !mark {
			return nil
		}
		t, err := e.opts.Log.AppendCheckpoint(enc.body())
		if err == nil {
			if mark {
				e.mu.Lock()
				if e.snapActive && e.snapFrom == 0 {
					e.snapFrom = uint64(t.LSN)
				}
				e.mu.Unlock()
			}
			err = t.Wait()
		}
		if err != nil {
			e.requeue(enc)
			return err
		}
		if !more {
			return nil
		}
	}
}

// collect encodes changes into the open body until it passes
// checkpointSplitBytes: the dirty states shard by shard, then the
// subscriptions. It reports whether changes are left for another body.
func (e *Engine) collect(c *collector, enc *encoder) bool {
	for ; c.shard < numShards; c.shard++ {
		if enc.entries > 0 && enc.bodyLen() >= e.splitBytes {
			return true
		}
		sh := &e.shards[c.shard]
		sh.mu.Lock()
		if len(sh.dirty) > 0 {
			for k := range sh.dirty {
				s, ok := sh.getLocked(k)
				enc.state(k, s, !ok)
			}
			if len(sh.dirty) > dirtyShrinkLen {
				sh.dirty = make(map[Key]struct{})
			} else {
				clear(sh.dirty)
			}
		}
		sh.mu.Unlock()
	}
	if !c.subs {
		c.subs = true
		e.subMu.Lock()
		for k := range e.subDirty {
			s, ok := e.subs[k]
			enc.sub(k, s, !ok)
		}
		clear(e.subDirty)
		e.subMu.Unlock()
	}
	return false
}

// requeue hands the changes of a body that did not become durable back to
// the engine: its keys are marked dirty again, so the next checkpoint
// writes their state as it is then. Changes not collected yet are still
// dirty.
func (e *Engine) requeue(enc *encoder) {
	if entries, err := checkpointEntries(enc.body()); err == nil {
		_ = decodeEntries(entries, formatVersion, requeuer{e})
	}
	e.markChanged()
}

// requeuer marks the keys of a failed body dirty.
type requeuer struct{ e *Engine }

func (r requeuer) state(k Key, _ lease.State, _ bool) {
	sh := r.e.shardFor(k)
	sh.mu.Lock()
	sh.dirty[k] = struct{}{}
	sh.mu.Unlock()
}

func (r requeuer) sub(k subKey, _ Subscription, _ bool) {
	r.e.subMu.Lock()
	r.e.subDirty[k] = struct{}{}
	r.e.subMu.Unlock()
}

func (requeuer) record(uint64, []byte) {}
func (requeuer) dropRecord(uint64)     {}
func (requeuer) dropAllRecords()       {}
