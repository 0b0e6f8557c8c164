package broker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/combmq/comb/broker/ready"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

type claimResult struct {
	verdict    ready.Verdict
	key, until int64
	n          int
}

// claim tries to claim p for pc under the partition lock (spec 3.5 steps 2-4):
// re-verify lease and cursor, read from committed+1 up to the remaining
// budget (stopping before the first message younger than delayedProcessing),
// then grant the request's lease on the span, or commit it with autoAck.
// The verdict tells the ready structure what to do with p.
func (b *Broker) claim(pc *popCtx, p *partition) (claimResult, error) {
	opts := p.q.options()
	k := cursor.Key{Partition: p.id, Group: pc.group}
	now := pc.nowMicros
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return claimResult{verdict: ready.Done}, nil
	}
	if err := p.damagedErr(); err != nil {
		return claimResult{verdict: ready.Done}, err
	}
	st, ok := b.cur.Get(k)
	if !ok {
		// The group's cursor row appears on its first contact (seed 000).
		st.Committed = b.seedCursorLocked(pc, p)
		b.cur.Set(k, st)
		b.cursorChanged(p, pc.group)
		pc.dirty = true
	}
	if !lease.CanClaim(st, now) {
		// seed 000: a leased partition is skipped without blocking.
		return claimResult{verdict: ready.Later, until: st.Lease.ExpiresAtMicros}, nil
	}
	vis := p.claimableEnd() // past visible: the answer waits for the push (write_early.go)
	from := max(st.Committed+1, p.liveFrom())
	if from >= vis {
		return claimResult{verdict: ready.Done}, nil
	}
	if wb := opts.WindowBuffer; wb > 0 {
		// spec 3.9: held back while the newest message is younger than the window.
		if hold := p.log.LastTimestamp() + wb*1_000_000; hold > now {
			return claimResult{verdict: ready.Later, until: hold}, nil
		}
	}
	buf := readBufPool.Get().(*segment.ReadBuffer)
	msgs, from, cl, err := b.readLiveSpanLocked(pc, p, from, vis, opts, buf)
	if err == nil && len(msgs) > 0 {
		raiseCursorTo(&st, from) // the offsets before from are expired or removed
		msgs, cl, st, err = b.dropDeletedLocked(pc, p, k, st, msgs, vis, opts.DelayedProcessing, buf, cl)
	}
	if err != nil || len(msgs) == 0 {
		readBufPool.Put(buf)
		return cl, err
	}
	cl, st = b.takeSpanLocked(pc, p, k, st, msgs, vis, opts.LeaseTime)
	if end := msgs[len(msgs)-1].Offset; end >= p.visible.Load() {
		pc.noteEarlyLocked(p, end)
	}
	if pc.req.AutoAck {
		p.forgetClaimedLocked(&b.claimed, pc.group)
	} else {
		b.rememberClaimedLocked(p, pc.group, msgs)
	}
	pc.bufs = append(pc.bufs, buf)
	b.addClaimed(pc, p, st, msgs)
	return cl, nil
}

// readSpanLocked reads the messages a claim may take from offset from: at most
// the pop's remaining message and byte budgets, none at or past vis (not yet
// visible), none younger than delay seconds (delayedProcessing, spec 3.9).
// With no messages, the claim result says why: nothing there (done), the
// first one too young (later, until it is old enough), or a read error.
// The caller holds p.mu.
func (b *Broker) readSpanLocked(pc *popCtx, p *partition, from, vis uint64, delay int64, buf *segment.ReadBuffer) ([]segment.Message, claimResult, error) {
	msgs, err := p.log.Read(from, int(min(uint64(pc.budget), vis-from)), pc.bytesLeft, buf)
	if err != nil {
		if b.markDamaged(p, err) {
			return nil, claimResult{verdict: ready.Done}, p.damagedErr()
		}
		return nil, claimResult{verdict: ready.Again}, fmt.Errorf("queue %s partition %s: read from offset %d: %w", p.q.name, p.name, from, err)
	}
	for len(msgs) > 0 && msgs[len(msgs)-1].Offset >= vis {
		msgs = msgs[:len(msgs)-1]
	}
	if delay > 0 && len(msgs) > 0 {
		// spec 3.9: stop before the first message younger than delayedProcessing.
		cutoff := pc.nowMicros - delay*1_000_000
		i := sort.Search(len(msgs), func(i int) bool { return msgs[i].TimestampMicros > cutoff })
		if i == 0 {
			return nil, claimResult{verdict: ready.Later, key: msgs[0].TimestampMicros, until: msgs[0].TimestampMicros + delay*1_000_000}, nil
		}
		msgs = msgs[:i]
	}
	return msgs, claimResult{verdict: ready.Done}, nil
}

// takeSpanLocked claims msgs (non-empty) for pc from state st: it grants the
// request's lease on the span (leaseTime is the queue's default), or with
// autoAck commits it at once, and records the change to wait for and to undo.
// It returns the verdict for the ready structure and the new state.
// The caller holds p.mu.
func (b *Broker) takeSpanLocked(pc *popCtx, p *partition, k cursor.Key, st lease.State, msgs []segment.Message, vis uint64, leaseTime int64) (claimResult, lease.State) {
	end := msgs[len(msgs)-1].Offset
	cl := claimResult{n: len(msgs), key: msgs[0].TimestampMicros}
	before := st
	if pc.req.AutoAck {
		lease.AutoAck(&st, end)
		cl.verdict = ready.Done
		if end+1 < vis {
			cl.verdict, cl.key = ready.Again, msgs[len(msgs)-1].TimestampMicros
		}
	} else {
		secs := lease.EffectiveSeconds(pc.req.LeaseSeconds, leaseTime)
		exp := pc.nowMicros + secs*1_000_000
		lease.Grant(&st, pc.leaseID, pc.req.WorkerID, end, exp)
		cl.verdict, cl.until = ready.Later, exp
	}
	b.cur.Set(k, st)
	b.cursorChanged(p, pc.group)
	pc.dirty = true
	pc.undo.note(p, k, before, st)
	return cl, st
}

// addClaimed spends the pop's budgets on msgs, claimed from p with state st,
// and adds them to its result, each payload opened (spec 9.2: decrypted on
// pop).
func (b *Broker) addClaimed(pc *popCtx, p *partition, st lease.State, msgs []segment.Message) {
	pc.budget -= len(msgs)
	var lagSumMs, lagMaxMs uint64 // the pop lag of the per-minute series (maint_series.go)
	for i := range msgs {
		pc.bytesLeft -= len(msgs[i].Payload) + len(msgs[i].Extra) // as Read counts them
		lag := uint64(max(pc.nowMicros-msgs[i].TimestampMicros, 0) / 1000)
		lagSumMs, lagMaxMs = lagSumMs+lag, max(lagMaxMs, lag)
	}
	p.q.an.Popped(len(msgs), lagSumMs, lagMaxMs)
	if pc.req.AutoAck {
		p.q.an.Processed(len(msgs))
	}
	pc.parts--
	res := pc.res
	if res.PartitionsClaimed == 0 {
		res.Partition, res.PartitionID = p.name, p.idStr
	}
	res.PartitionsClaimed++
	if res.Messages == nil {
		res.Messages = getMessages(min(pc.req.Batch, maxPooledMessages))
	}
	retries := int64(st.Retries)
	// The span's message ids as one string, each Message.ID a slice of it:
	// one allocation instead of one per message.
	var idb strings.Builder
	idb.Grow(36 * len(msgs))
	var one [36]byte
	for i := range msgs {
		idb.Write(appendUUID(one[:0], msgs[i].ID))
	}
	ids := idb.String()
	for i := range msgs {
		m := &msgs[i]
		payload, payloadErr := b.readPayload(p.q, m.ID, m.Payload)
		res.Messages = append(res.Messages, Message{
			ID: ids[36*i : 36*i+36], TransactionID: m.TransactionID, TraceID: m.TraceID, ProducerSub: m.ProducerSub,
			Payload: payload, PayloadError: payloadErr, CreatedAtMicros: m.TimestampMicros, Queue: p.q.name, Partition: p.name,
			PartitionID: p.idStr, RetryCount: retries, Offset: m.Offset,
		})
	}
}

// pendingEstimate is how many messages the oldest ready partition holds for
// the group (0 when leased or unknown); minPopWaitTime uses it.
func (b *Broker) pendingEstimate(pc *popCtx, g *groupReady) int64 {
	p := g.Peek()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := b.cur.Get(cursor.Key{Partition: p.id, Group: pc.group})
	if !ok {
		st.Committed = b.seedCursorLocked(pc, p)
	}
	if st.Lease.Live(pc.nowMicros) {
		return 0
	}
	vis, from := p.claimableEnd(), max(st.Committed+1, p.liveFrom())
	if from >= vis {
		return 0
	}
	return int64(vis - from)
}
