package broker

import (
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// cursorUndo is a change to one (partition, group) state that is in the
// cursor engine's memory but not yet durable: what to put back if the
// checkpoint meant to hold it fails.
type cursorUndo struct {
	p             *partition
	k             cursor.Key
	before, after lease.State
}

// undoLog collects the changes of one request.
type undoLog []cursorUndo

// note records that k on p went from before to after (the caller holds p.mu).
func (u *undoLog) note(p *partition, k cursor.Key, before, after lease.State) {
	if before != after {
		*u = append(*u, cursorUndo{p: p, k: k, before: before, after: after})
	}
}

// undoCursorChanges puts back the states a request changed when the checkpoint
// that was to make them durable failed (issue 10): a pop releases what it
// claimed, so no lease outlives a 5xx answer and the group is served again as
// soon as the disk takes checkpoints; an ack, extend or seek is as if it never
// happened, which is also what a crash now would leave. A state somebody
// changed since (it no longer equals after) is theirs and is left alone. The
// put-back is itself a change: the cursor engine writes it with the next good
// checkpoint, together with the failed one's keys.
//
// Each partition whose state came back gets its ready entry touched, so wildcard
// and discovery pops find it again at once instead of after the lease's expiry.
func (b *Broker) undoCursorChanges(u undoLog) {
	if len(u) == 0 {
		return
	}
	now := b.now().UnixMicro()
	for i := len(u) - 1; i >= 0; i-- {
		c := &u[i]
		c.p.mu.Lock()
		cur, ok := b.cur.Get(c.k)
		undone := ok && cur == c.after
		if undone {
			b.cur.Set(c.k, c.before)
			b.cursorChanged(c.p, c.k.Group)
		}
		c.p.mu.Unlock()
		if undone {
			b.leaseReleased(c.p, c.k.Group, now)
		}
	}
}
