package broker

import "fmt"

// Early claims (issue 23): a push exposes its records to pops as soon as
// their commit-log entry is appended, before the entry is durable, and a pop
// that claims them answers only once that entry is durable. A woken
// long-poll used to pay two commits in series, the push's (it was woken only
// after it) and then its own checkpoint's; now the wake, the claim and the
// checkpoint's append overlap the push's commit, and the checkpoint usually
// joins the push's group (the group-commit wait holds a batch until an
// urgent entry, a consumer's checkpoint, joins it), so one fdatasync serves
// both.
//
// Why no guarantee is lost:
//
//   - A pop's answer waits for its checkpoint (cursor.Engine.Wait) and then
//     for the partition's tail as it read it under the partition lock with
//     the claim (p.tail: the ticket of the last commit-log entry that
//     appended to the log, which covers every record below the log's next
//     offset; write_durable.go). So nothing a pop returns is un-durable (on
//     a replicated node: un-committed in raft) when it answers. The tail's
//     entry precedes the checkpoint in the same sequential log, so on the
//     local log the second wait costs nothing once the first returned.
//   - A failed commit delivers nothing and leaves no claim: the tail's wait
//     fails (a failed batch fails the local log for good, and every later
//     ticket with it; raft commits a prefix, so a deposed leader's later
//     entries fail too; a record appended without an entry leaves a
//     failedTicket as the tail), the pop answers the error and puts its
//     claims back (undoCursorChanges), as after a failed checkpoint.
//   - kill -9: a checkpoint naming an exposed record is durable only after
//     the record's own entry (lower LSN, same log), so recovery never finds
//     a cursor or a lease past what the partition holds. A cursor snapshot
//     is installed only once a checkpoint holding every change it read is
//     durable (cursor/snapshot.go), which covers the pushes for the same
//     reason.
//   - Everything but pops still reads partition.visible, raised only for
//     durable records: the message list, counts, dedup's "published, hence
//     durable" rule, retention. A pop that answers raises visible itself to
//     the end of what it claimed, so the client's ack (resolved below
//     visible) never races the push's own publish.
//   - Push maintenance (spec 1.8): a push appended while it holds pushes
//     exposes nothing; one that exposed before maintenance began publishes
//     as usual and answers `queued` (its records may be claimed already).

// claimableEnd is the offset after the last record a pop may claim now:
// visible, or further what a push exposed before its commit.
func (p *partition) claimableEnd() uint64 {
	return max(p.visible.Load(), p.claimable.Load())
}

// exposeLocked lets pops claim p's records below next, which the caller has
// just appended with their commit-log entry, unless push maintenance holds
// pushes (spec 1.8). It reports whether it did. The caller holds p.mu and
// announces the records once it has let it go (announce).
func (b *Broker) exposeLocked(p *partition, next uint64) bool {
	if b.mm.push.Load() {
		return false
	}
	if next > p.claimable.Load() {
		p.claimable.Store(next)
	}
	return true
}

// announce tells p's queue's ready sets that p has new records stamped ts,
// and wakes the long-polls parked on its queue and on every queue (spec 1.4
// "Wake-up", seed 000 "Long-poll"). Called without p.mu (the queue lock
// comes before it).
func (b *Broker) announce(p *partition, ts int64) {
	p.q.mu.RLock()
	for _, g := range p.q.groups {
		g.Pushed(p, ts)
	}
	p.q.mu.RUnlock()
	b.wake.Signal(p.q.gate)
	b.wake.Signal(b.anyGate)
}

// raiseVisible makes offsets below next visible (they are durable) and
// keeps the pending counter current; the ready sets and the wake are
// announce's.
func (b *Broker) raiseVisible(p *partition, next uint64) {
	for {
		cur := p.visible.Load()
		if next <= cur || p.visible.CompareAndSwap(cur, next) {
			break
		}
	}
	b.refreshPending(p)
}

// earlyClaim is a partition a pop claimed from past its visible mark, and
// the offset after the last message it took there.
type earlyClaim struct {
	p    *partition
	next uint64
}

// noteEarlyLocked records that pc claimed p up to end, past p's visible
// mark: its answer waits for p's tail as it is now. The caller holds p.mu.
func (pc *popCtx) noteEarlyLocked(p *partition, end uint64) {
	pc.earlyTail = later(pc.earlyTail, p.tail)
	pc.early = append(pc.early, earlyClaim{p, end + 1})
}

// waitEarly waits until the pushes of what pc claimed past the visible marks
// are durable, then raises those marks to the end of its claims. Called after
// the pass's checkpoint is durable; an error means the pop must deliver
// nothing and put its claims back.
//
// Errors: the commit log's failure of a claimed record's entry, wrapped.
func (b *Broker) waitEarly(pc *popCtx) error {
	if len(pc.early) == 0 {
		return nil
	}
	if err := pc.earlyTail.Wait(); err != nil {
		return fmt.Errorf("broker: pop: commit of the claimed messages' push: %w", err)
	}
	for _, c := range pc.early {
		b.raiseVisible(c.p, c.next)
	}
	return nil
}
