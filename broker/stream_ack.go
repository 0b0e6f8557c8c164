package broker

import (
	"fmt"

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
// succeeds (spec 11 #13). msg is why the ack fails the cycle.
func streamAckState(pre lease.State, offset uint64, a *StreamAck, release bool, nowMicros int64) (post lease.State, r StreamAckResult, msg string) {
	r = StreamAckResult{Success: true, Count: max(a.Count, 1)}
	switch {
	case offset == 0:
		return pre, r, lease.ErrTextNotFound
	case offset <= pre.Committed:
		return pre, r, ""
	}
	if a.LeaseID != "" {
		id, ok := parseID(a.LeaseID)
		if !ok || id != pre.Lease.ID || !pre.Lease.Live(nowMicros) {
			return pre, r, lease.ErrTextInvalidLease
		}
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

// cycleAckEval resolves the cycle's ack against the source partition's
// current state (the caller holds its lock).
func (b *Broker) cycleAckEval(c *cycleRun, nowMicros int64) (k cursor.Key, pre, post lease.State, had bool, offset uint64, r StreamAckResult, msg string, err error) {
	k = cursor.Key{Partition: c.src.id, Group: c.req.Group}
	pre, had = b.cur.Get(k)
	acks := []lease.Ack{{}}
	txid := c.req.Ack.TransactionID
	if err = b.resolveOffsetsLocked(c.src, acks, func(int) string { return txid }, pre.Lease); err != nil {
		return k, pre, pre, had, 0, r, "", b.storageErr(c.src, err)
	}
	offset = acks[0].Offset
	post, r, msg = streamAckState(pre, offset, c.req.Ack, c.req.ReleaseLease, nowMicros)
	return k, pre, post, had, offset, r, msg, nil
}

// cyclePrecheck evaluates the ack before the sink partitions are created, so
// a cycle that fails on its ack leaves no trace (as txTargets does). It is
// evaluated again, locked, by cycleStageAck: the state may move in between.
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
	_, _, _, _, _, _, msg, err := b.cycleAckEval(c, b.now().UnixMicro())
	return msg, err
}

// cycleStageAck adds the ack's cursor move (with the lease kept or cleared)
// and its DLQ entry to the transaction's entry; nothing is set yet.
func (b *Broker) cycleStageAck(c *cycleRun) (string, error) {
	if c.req.Ack == nil {
		return "", nil
	}
	t := c.t
	k, pre, post, had, offset, r, msg, err := b.cycleAckEval(c, t.now)
	if err != nil || msg != "" {
		return msg, err
	}
	c.res.Ack = &r
	if r.DLQ {
		item := dlqItem{offset: offset, group: k.Group, errMsg: c.req.Ack.Error}
		recs, err := b.buildDLQRecordsLocked(c.src, []dlqItem{item}, t.now, streamDLQError, fmt.Sprintf("tx/%s/%d", t.res.TransactionID, len(t.rec.DLQ)))
		if err != nil {
			return "", err
		}
		for _, rec := range recs {
			t.rec.DLQ = append(t.rec.DLQ, redoDLQ{Queue: c.src.q.id, Rec: rec})
		}
	}
	if post != pre {
		t.rec.States = append(t.rec.States, redoState{Partition: c.src.id, Group: k.Group, HadPre: had, Pre: pre, Post: post})
		t.sets = append(t.sets, txStateSet{k: k, p: c.src, post: post, released: r.LeaseReleased})
	}
	return "", nil
}
