package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// ackBatch is one request's items for one partition.
type ackBatch struct {
	p    *partition
	acks []lease.Ack
}

// ackScratch is one Ack call's working memory, pooled (ackScratches): the
// per-partition batches with their lease.Ack slices, ApplyAcks's outcomes and
// the undo log. A batch of 100 acks allocated ~12 KB of them per request
// (issue 23: no per-request allocation on the hot paths). release clears
// everything that names a request string or a partition before pooling.
type ackScratch struct {
	batches []ackBatch // batches[:n] in use; the rest keep their acks' capacity
	byPart  map[*partition]int
	lease   lease.Scratch
	undo    undoLog
}

var ackScratches = sync.Pool{New: func() any { return new(ackScratch) }}

// maxPooledAcks keeps one huge ack request from pinning its slices in the pool.
const maxPooledAcks = 4096

// manyAckBatches is the batch count past which groupAcks finds a partition's batch
// through a map instead of a scan (an ack request is nearly always one pop's:
// one partition).
const manyAckBatches = 8

func (sc *ackScratch) release() {
	for i := range sc.batches {
		ab := &sc.batches[i]
		if cap(ab.acks) > maxPooledAcks {
			return
		}
		clear(ab.acks[:cap(ab.acks)]) // RawStatus aliases the request
		ab.p, ab.acks = nil, ab.acks[:0]
	}
	sc.batches, sc.byPart = sc.batches[:0], nil
	clear(sc.undo[:cap(sc.undo)])
	sc.undo = sc.undo[:0]
	ackScratches.Put(sc)
}

// batchFor is p's batch, a new one (at index n of the batches in use) when it has
// none; sizeHint is the capacity a new batch's acks start with at least.
func (sc *ackScratch) batchFor(p *partition, sizeHint int) *ackBatch {
	n := len(sc.batches)
	if sc.byPart != nil {
		if j, ok := sc.byPart[p]; ok {
			return &sc.batches[j]
		}
	} else {
		for j := range sc.batches {
			if sc.batches[j].p == p {
				return &sc.batches[j]
			}
		}
	}
	if n < cap(sc.batches) {
		sc.batches = sc.batches[:n+1]
	} else {
		sc.batches = append(sc.batches, ackBatch{})
	}
	ab := &sc.batches[n]
	ab.p = p
	if cap(ab.acks) < sizeHint {
		ab.acks = make([]lease.Ack, 0, sizeHint)
	}
	ab.acks = ab.acks[:0]
	if sc.byPart != nil {
		sc.byPart[p] = n
	} else if n+1 > manyAckBatches {
		sc.byPart = make(map[*partition]int, 2*(n+1))
		for j := range sc.batches {
			sc.byPart[sc.batches[j].p] = j
		}
	}
	return ab
}

// Ack applies acknowledgements for one consumer group (spec 4): items are
// resolved to offsets by (partitionId, transactionId), grouped by partition
// and applied in message order with the offset-commit, clamping and retry
// rules of spec 4.6 (package lease). Results come back in input order.
//
// Durability: DLQ entries are appended and synced before the cursor moves past
// their messages, and Ack returns only after the checkpoint holding the new
// cursors is durable, so an acknowledged ack survives a crash.
//
// Ack keeps none of the items' strings once it returns (the results echo them),
// so a caller may pass strings that alias its request buffer.
//
// Errors: ErrClosed, storage errors (HTTP 500; acks are idempotent, a retry is
// harmless). Per-item problems are in the results, not the error.
func (b *Broker) Ack(group string, items []AckItem) ([]AckResult, error) {
	return b.AckInto(nil, group, items)
}

// AckInto is Ack with the results written into dst's memory (dst[:0], a new
// slice when its capacity is short of len(items); nil always makes one): the
// ack handler passes the slice of its previous request, so the results of a
// batch of 100 (~9 KB) are not allocated on every request. Neither items nor
// dst is kept once AckInto returns. On an error the result is nil.
func (b *Broker) AckInto(dst []AckResult, group string, items []AckItem) ([]AckResult, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return nil, err
	}
	defer b.leave()
	if group == "" {
		group = QueueModeGroup
	}
	var results []AckResult
	if dst != nil && cap(dst) >= len(items) {
		results = dst[:len(items)]
		clear(results)
	} else {
		results = make([]AckResult, len(items))
	}
	if len(items) == 0 {
		return results, nil
	}
	b.stats.ackRequests.Add(1)
	b.stats.ackMessages.Add(uint64(len(items)))
	sc := ackScratches.Get().(*ackScratch)
	defer sc.release()
	batches := b.groupAcks(sc, items, results)
	now := b.now().UnixMicro()
	changed := false
	var firstErr error
	for i := range batches {
		ab := &batches[i]
		ch, released, err := b.ackPartition(ab, group, items, results, now, sc)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		changed = changed || ch
		if released {
			b.leaseReleased(ab.p, group, now)
		}
	}
	if changed {
		if err := b.cur.Wait(); err != nil {
			// Not durable, so not acknowledged: put the states back (issue
			// 10). The client's retry applies the acks again.
			b.undoCursorChanges(sc.undo)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return nil, b.closedErr(firstErr)
	}
	countAcks(batches, results)
	var ok uint64
	for i := range results {
		if results[i].Success {
			ok++
		}
	}
	b.stats.ackSuccess.Add(ok)
	b.stats.ackFailed.Add(uint64(len(results)) - ok)
	return results, nil
}

// groupAcks fills every result's echo fields and splits the items by
// partition into sc's batches; unknown partitions get "Message not found" at
// once.
func (b *Broker) groupAcks(sc *ackScratch, items []AckItem, results []AckResult) []ackBatch {
	// The items of a popped batch share one partition id and one lease id: parse and look each
	// up once per run instead of once per item.
	var lastPart, lastLease string
	var lastP *partition
	var lastLeaseID [16]byte
	b.mu.RLock()
	for i := range items {
		it := &items[i]
		results[i] = AckResult{Index: i, TransactionID: it.TransactionID}
		p := lastP
		if i == 0 || it.PartitionID != lastPart {
			id, ok := parseID(it.PartitionID)
			p = b.parts[id]
			if !ok {
				p = nil
			}
			lastPart, lastP = it.PartitionID, p
		}
		if p == nil {
			results[i].Error = "Message not found"
			continue
		}
		// A popped batch is one partition's: its acks all land in the first batch, sized
		// for all of them, with no growing copies. Others grow as they fill.
		hint := 0
		if len(sc.batches) == 0 {
			hint = len(items) - i
		}
		ab := sc.batchFor(p, hint)
		a := lease.Ack{Index: i, Status: lease.ParseStatus(it.Status), RawStatus: it.Status}
		if it.LeaseID != "" {
			// An unparsable lease id is never live (contract of lease.Ack).
			if it.LeaseID != lastLease {
				lastLeaseID, _ = parseID(it.LeaseID)
				lastLease = it.LeaseID
			}
			a.HasLeaseID = true
			a.LeaseID = lastLeaseID
		}
		ab.acks = append(ab.acks, a)
	}
	b.mu.RUnlock()
	return sc.batches
}

// resolveAckOffsetsLocked sets each ack's Offset from its transactionId: from
// the ids group's last pop leased on p (claimedTxids) first, then, for the
// acks those do not answer, by resolveOffsetsLocked. /ack and the acks of a
// transaction share it. The caller holds p.mu.
func (b *Broker) resolveAckOffsetsLocked(p *partition, group string, acks []lease.Ack, txid func(i int) string, span lease.Lease) error {
	rest := resolveClaimedLocked(p, group, acks, txid, span)
	if len(rest) == 0 {
		return nil
	}
	sub := make([]lease.Ack, len(rest))
	for i, j := range rest {
		sub[i] = acks[j]
	}
	if err := b.resolveOffsetsLocked(p, sub, txid, span); err != nil {
		return err
	}
	for i, j := range rest {
		acks[j].Offset = sub[i].Offset
	}
	return nil
}

// fewAcksSpanMax is the longest leased span resolveOffsetsLocked reads for one
// or two acks: the dedup lookup verifies its candidate by reading up to 1,024
// messages (segment's verifyReadMsgs), so a shorter span read never costs more.
const fewAcksSpanMax = 1024

// resolveOffsetsLocked sets each ack's Offset from its transactionId; 0 (not
// found) for unknown or not yet visible messages. Acks of a popped batch
// almost always name messages of the partition's leased span, so with several
// acks that span is read once and matched first: one read instead of one
// dedup lookup (and its verifying read) per message. One or two acks read it
// only when it is no longer than that verifying read (fewAcksSpanMax).
// The caller holds p.mu.
func (b *Broker) resolveOffsetsLocked(p *partition, acks []lease.Ack, txid func(i int) string, span lease.Lease) error {
	vis := p.visible.Load()
	var inSpan map[string]uint64
	n := span.End - span.Start + 1
	if span.Held() && span.End >= span.Start && n <= uint64(b.cfg.MaxBatch) && (len(acks) > 2 || n <= fewAcksSpanMax) {
		buf := readBufPool.Get().(*segment.ReadBuffer)
		defer func() { buf.Reset(); readBufPool.Put(buf) }()
		if msgs, err := p.log.Read(span.Start, int(span.End-span.Start+1), maxReadBytes, buf); err == nil {
			// Keys alias buf, which outlives the map (released on return).
			inSpan = make(map[string]uint64, len(msgs))
			for i := range msgs {
				if msgs[i].Offset <= span.End {
					inSpan[msgs[i].TransactionID] = msgs[i].Offset
				}
			}
		}
	}
	var rest []int // acks the span did not answer: one dedup lookup for all of them
	for j := range acks {
		if off, ok := inSpan[txid(acks[j].Index)]; ok && off < vis {
			acks[j].Offset = off
			continue
		}
		rest = append(rest, j)
	}
	if len(rest) == 0 {
		return nil
	}
	txids := make([]string, len(rest))
	for k, j := range rest {
		txids[k] = txid(acks[j].Index)
	}
	err := p.log.FindTransactions(txids, func(k int, off uint64, _ [16]byte) {
		if off < vis {
			acks[rest[k]].Offset = off
		}
	})
	if err != nil {
		return fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
	}
	return nil
}

// ackPartition applies one partition's acks under the partition lock.
// released reports that the ack released the group's lease on the partition.
// The change goes to undo unless it dead-lettered messages: their DLQ copies
// are durable already, so putting the cursor back would make a retried ack
// dead-letter them twice; that change stays in memory and is written with a
// later checkpoint.
func (b *Broker) ackPartition(ab *ackBatch, group string, items []AckItem, results []AckResult, now int64, sc *ackScratch) (changed, released bool, err error) {
	p := ab.p
	q := p.q
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		for _, a := range ab.acks {
			results[a.Index].Error = "Message not found"
		}
		return false, false, nil
	}
	if err := p.damagedErr(); err != nil {
		return false, false, err
	}
	k := cursor.Key{Partition: p.id, Group: group}
	st, _ := b.cur.Get(k)
	if err := b.resolveAckOffsetsLocked(p, group, ab.acks, func(i int) string { return items[i].TransactionID }, st.Lease); err != nil {
		return false, false, b.storageErr(p, err)
	}
	before := st
	out, ch, _ := sc.lease.ApplyAcks(&st, ab.acks, q.options().RetryLimit, now, false)
	var dlq []dlqItem
	for j, o := range out {
		if o.DLQ {
			it := &items[o.Index]
			dlq = append(dlq, dlqItem{offset: ab.acks[j].Offset, group: group, errMsg: it.Error, retries: int64(before.Retries)})
		}
	}
	if len(dlq) > 0 {
		// The DLQ copy is durable before the cursor passes its message.
		if err := b.writeDLQLocked(p, dlq, now, "Retries exhausted", ""); err != nil {
			return false, false, b.storageErr(p, err)
		}
	}
	if ch {
		b.cur.Set(k, st)
		b.cursorChanged(p, group)
		if len(dlq) == 0 {
			sc.undo.note(p, k, before, st)
		}
	}
	for _, o := range out {
		r := &results[o.Index]
		r.Success, r.Error, r.LeaseReleased, r.DLQ, r.AlreadyCommitted = o.Success, o.Error, o.LeaseReleased, o.DLQ, o.AlreadyCommitted
		r.QueueName, r.PartitionName = q.name, p.name
	}
	released = before.Lease.Held() && st.Lease.ID != before.Lease.ID
	if released || !st.Lease.Held() {
		p.forgetClaimedLocked(&b.claimed, group)
	}
	return ch, released, nil
}
