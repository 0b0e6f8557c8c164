package broker

import (
	"fmt"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// streamAckStatuses are a cycle ack's statuses; true dead-letters.
// "" is the HTTP layer's default, completed.
var streamAckStatuses = map[string]bool{"": false, "completed": false, "success": false, "failed": true, "dlq": true}

// streamDLQError is a dead-lettered cycle ack's error when it has none.
const streamDLQError = "Streaming cycle reported failure"

// streamAckState is the ack rule of a cycle (spec 10; Queen's
// streams_cycle_v1), which differs from /ack: the message is found by its
// transactionId (offset, 0 = not found); a leaseId, when given, must be the
// live lease of the (partition, group); the cursor moves to the message,
// everything before it consumed. completed/success clear the lease only with
// release (false keeps it, so the rest of the leased span is redelivered in
// order once it expires); failed/dlq dead-letter the message and always clear
// it. An ack at or below the cursor (already consumed) changes nothing and
// succeeds (spec 11 #13), but only once its leaseId passed: unlike a bare
// ack, a cycle carries state ops and pushes, and a cycle sent again with a
// released or expired lease (a retry after a lost answer, a worker whose
// lease ran out while another committed the span) would apply them twice and
// write older state over newer. msg is why the ack fails the cycle.
func streamAckState(pre lease.State, offset uint64, a *StreamAck, release bool, nowMicros int64) (post lease.State, r StreamAckResult, msg string) {
	r = StreamAckResult{Success: true, Count: max(a.Count, 1)}
	if offset == 0 {
		return pre, r, lease.ErrTextNotFound
	}
	if a.LeaseID != "" {
		id, ok := parseID(a.LeaseID)
		if !ok || id != pre.Lease.ID || !pre.Lease.Live(nowMicros) {
			return pre, r, lease.ErrTextInvalidLease
		}
	}
	if offset <= pre.Committed {
		return pre, r, ""
	}
	post = pre
	post.Committed = offset
	r.DLQ = streamAckStatuses[a.Status]
	if r.DLQ || release {
		r.LeaseReleased = pre.Lease.Held()
		post.Lease, post.Retries = lease.Lease{}, 0
	}
	return post, r, ""
}

// cycleAck is a cycle's ack evaluated against its (partition, group) state.
type cycleAck struct {
	k         cursor.Key
	pre, post lease.State
	had       bool   // the state existed
	offset    uint64 // the acked message (0 = not found)
	res       StreamAckResult
	msg       string // why the ack fails the cycle ("" = it does not)
}

// cycleAckEval resolves the cycle's ack against the source partition's
// current state (the caller holds its lock). The acked message's offset is
// looked up once per cycle (cycleAckOffset) and kept in c: a transactionId's
// offset in a partition never changes, only the state it is judged against.
func (b *Broker) cycleAckEval(c *cycleRun, nowMicros int64) (cycleAck, error) {
	a := cycleAck{k: cursor.Key{Partition: c.src.id, Group: c.req.Group}}
	a.pre, a.had = b.cur.Get(a.k)
	if c.ackOffset == 0 {
		off, err := b.cycleAckOffset(c.src, c.req.Group, c.req.Ack.TransactionID, a.pre.Lease)
		if err != nil {
			return a, b.storageErr(c.src, err)
		}
		c.ackOffset = off
	}
	a.offset = c.ackOffset
	a.post, a.res, a.msg = streamAckState(a.pre, a.offset, c.req.Ack, c.req.ReleaseLease, nowMicros)
	return a, nil
}

// cycleAckOffset is the offset of p's message with transactionId txid (0 =
// not found or not visible yet), resolved as /ack resolves one
// (resolveAckOffsetsLocked: the ids the pop remembered, then the leased span,
// then the dedup index). The caller holds p's lock.
func (b *Broker) cycleAckOffset(p *partition, group, txid string, span lease.Lease) (uint64, error) {
	acks := []lease.Ack{{}}
	err := b.resolveAckOffsetsLocked(p, group, acks, func(int) string { return txid }, span)
	return acks[0].Offset, err
}

// cyclePrecheck evaluates the ack before the sink partitions are created, so
// a cycle that fails on its ack leaves no trace (as txTargets does). The
// state is judged again, locked, by cycleStageAck (it may move in between);
// the offset found here is kept.
func (b *Broker) cyclePrecheck(c *cycleRun) (string, error) {
	if c.req.Ack == nil {
		return "", nil
	}
	c.src.mu.Lock()
	defer c.src.mu.Unlock()
	if c.src.deleted {
		return "Partition not found", nil
	}
	if err := c.src.damagedErr(); err != nil {
		return "", err
	}
	a, err := b.cycleAckEval(c, b.now().UnixMicro())
	return a.msg, err
}

// cycleStageAck adds the ack's cursor move (with the lease kept or cleared)
// and its DLQ entry to the transaction's entry; nothing is set yet.
func (b *Broker) cycleStageAck(c *cycleRun) (string, error) {
	if c.req.Ack == nil {
		return "", nil
	}
	t := c.t
	a, err := b.cycleAckEval(c, t.now)
	if err != nil || a.msg != "" {
		return a.msg, err
	}
	c.res.Ack = &a.res
	if a.res.DLQ {
		item := dlqItem{offset: a.offset, group: a.k.Group, errMsg: c.req.Ack.Error}
		recs, err := b.buildDLQRecordsLocked(c.src, []dlqItem{item}, t.now, streamDLQError, fmt.Sprintf("tx/%s/%d", t.res.TransactionID, len(t.rec.DLQ)))
		if err != nil {
			return "", err
		}
		for _, rec := range recs {
			t.rec.DLQ = append(t.rec.DLQ, walentry.TxDLQ{Queue: c.src.q.id, Rec: rec})
		}
	}
	// As /ack: the pop's remembered ids go once the lease does.
	c.forgetClaimed = !a.post.Lease.Held() || a.post.Lease.ID != a.pre.Lease.ID
	if a.post != a.pre {
		t.rec.States = append(t.rec.States, walentry.TxState{Partition: c.src.id, Group: a.k.Group, HadPre: a.had, Pre: a.pre, Post: a.post})
		t.sets = append(t.sets, txStateSet{k: a.k, p: c.src, post: a.post, released: a.res.LeaseReleased})
	}
	return "", nil
}
