package broker

import (
	"github.com/combmq/comb/broker/ready"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// dropDeletedLocked removes deleted messages (DELETE /api/v1/messages, a
// tombstone in package notes) from a span a claim read, so that no group is
// ever given them again. Deleted messages at the head of the span are
// committed for the group at once (the cursor steps over them: there is
// nothing left to consume) and, when that was the whole read, the claim
// reads on from the new cursor; those at its tail are left out of the span,
// and those in between stay inside the leased span but are not delivered (an
// ack of a later message commits past them, spec 4.6). Costs one atomic load
// when no message is deleted, and one map lookup when none of p's is.
// The caller holds p.mu.
func (b *Broker) dropDeletedLocked(pc *popCtx, p *partition, k cursor.Key, st lease.State, msgs []segment.Message,
	vis uint64, delay int64, buf *segment.ReadBuffer, cl claimResult) ([]segment.Message, claimResult, lease.State, error) {
	ns := b.msgNotes.store
	if ns == nil || !ns.AnyDeletedIn(p.id) {
		return msgs, cl, st, nil
	}
	deleted := func(m *segment.Message) bool {
		return ns.Deleted(notes.MessageRef{Partition: p.id, Offset: m.Offset})
	}
	for {
		head := 0
		for head < len(msgs) && deleted(&msgs[head]) {
			head++
		}
		if head > 0 {
			before := st
			st.Committed = max(st.Committed, msgs[head-1].Offset)
			b.cur.Set(k, st)
			b.cursorChanged(p, pc.group)
			pc.dirty = true
			pc.undo.note(p, k, before, st)
		}
		if head < len(msgs) {
			kept := msgs[:0]
			for i := head; i < len(msgs); i++ {
				if !deleted(&msgs[i]) {
					kept = append(kept, msgs[i])
				}
			}
			return kept, cl, st, nil
		}
		from := st.Committed + 1
		if from >= vis {
			return nil, claimResult{verdict: ready.Done}, st, nil
		}
		var err error
		if msgs, cl, err = b.readSpanLocked(pc, p, from, vis, delay, buf); err != nil || len(msgs) == 0 {
			return nil, cl, st, err
		}
	}
}
