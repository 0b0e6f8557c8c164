package cursor

import (
	"time"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
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

// collector walks the changes of one generation across the frames it takes.
type collector struct {
	ops     []recOp // record changes taken from the engine, not yet encoded
	inFrame []recOp // record changes encoded into the open frame
	shard   int     // next shard to collect
	subs    bool    // subscriptions collected
}

// checkpoint collects every change since the previous collection into one
// checkpoint frame (several, past checkpointSplitBytes), writes and syncs it,
// then releases the Wait callers of its generation. It reports whether the
// generation is durable.
//
// On failure every change of the generation that is not on disk is handed
// back (marked changed again) for the next attempt, and the generation's
// waiters get a *CheckpointError. Only a failed fdatasync makes that sticky.
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

	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	wrote, err := e.writeGeneration()

	e.mu.Lock()
	if err == nil {
		e.durableGen = gen
		e.failing = false
	} else {
		cerr := &CheckpointError{Err: err, Sticky: sticky(err)}
		e.failedGen, e.failErr = gen, cerr
		if cerr.Sticky {
			e.err = cerr
		}
		if !e.failing {
			e.failing, e.failSince = true, time.Now()
		}
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	if err != nil || !wrote {
		return err == nil
	}
	// After the waiters are released: nobody waits for these.
	if ferr := e.afterCheckpoint(); ferr != nil {
		e.mu.Lock()
		e.err = &CheckpointError{Err: ferr, Sticky: true}
		e.failing, e.failSince = true, time.Now()
		e.cond.Broadcast()
		e.mu.Unlock()
	}
	return true
}

// writeGeneration writes the changes collected now as one or more checkpoint
// frames. wrote: at least one frame is on disk.
func (e *Engine) writeGeneration() (wrote bool, err error) {
	j := e.j
	e.recMu.Lock()
	c := collector{ops: e.recOps}
	e.recOps = nil
	e.recMu.Unlock()
	for {
		j.enc.reset()
		j.enc.beginCheckpoint(j.nextSeq)
		c.inFrame = c.inFrame[:0]
		more := e.collect(&c, j.enc)
		if j.enc.entries == 0 {
			return wrote, nil
		}
		err := j.enc.finish()
		if err == nil {
			err = j.append(j.enc.frame())
		}
		if err != nil {
			e.requeue(j.enc, &c)
			return wrote, err
		}
		wrote = true
		for _, op := range c.inFrame {
			if op.data != nil {
				j.logRecs[op.id] = op.data
			} else {
				delete(j.logRecs, op.id)
			}
		}
		if !more {
			return true, nil
		}
	}
}

// collect encodes changes into the open frame until it passes
// checkpointSplitBytes: record changes first (in order), then the dirty states
// shard by shard, then the subscriptions. It reports whether changes are
// left for another frame.
func (e *Engine) collect(c *collector, enc *encoder) bool {
	for len(c.ops) > 0 {
		if enc.entries > 0 && enc.bodyLen() >= checkpointSplitBytes {
			return true
		}
		op := c.ops[0]
		c.ops = c.ops[1:]
		c.inFrame = append(c.inFrame, op)
		if op.data != nil {
			enc.record(op.id, op.data)
		} else {
			enc.dropRecord(op.id)
		}
	}
	for ; c.shard < numShards; c.shard++ {
		if enc.entries > 0 && enc.bodyLen() >= checkpointSplitBytes {
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

// requeue hands the changes of a frame that did not become durable, and those
// not collected yet, back to the engine: the keys are marked dirty again (the
// next checkpoint writes their state as it is then) and the record changes go
// back to the front of the queue, before any made since.
func (e *Engine) requeue(enc *encoder, c *collector) {
	// The frame is whole in the buffer even when Finish refused it: its body
	// starts after the header room Begin left.
	if _, entries, err := checkpointBody(enc.buf[enc.start+record.HeaderSize:]); err == nil {
		_ = decodeEntries(entries, formatVersion, requeuer{e})
	}
	if ops := append(c.inFrame, c.ops...); len(ops) > 0 {
		e.recMu.Lock()
		e.recOps = append(ops, e.recOps...)
		e.recMu.Unlock()
	}
	e.markChanged()
}

// requeuer marks the keys of a failed frame dirty (its record changes are in
// the collector).
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

// afterCheckpoint extends the preallocated journal, or rotates it past
// SnapshotAfterBytes, or retries a snapshot that failed. Errors: only sticky
// ones (a failed fdatasync of the journal).
func (e *Engine) afterCheckpoint() error {
	if e.j.size >= e.opts.SnapshotAfterBytes {
		e.rotate()
	} else {
		e.retrySnapshot()
	}
	return e.j.extendAhead()
}
