package broker

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/streams"
)

// cycleRun is one streams cycle on its way through StreamCycle's steps.
type cycleRun struct {
	req    *StreamCycleRequest
	res    StreamCycleResult
	q      streams.Query
	src    *partition // the source partition: its lock serialises the shard
	t      *txRun     // the transaction the cycle commits as
	change streams.Change
	// ackOffset is the acked message's offset once cyclePrecheck found it
	// (cycleAckEval).
	ackOffset uint64
	// forgetClaimed: the ack leaves no lease of the group on the source,
	// so the ids its pop remembered go once the cycle commits.
	forgetClaimed bool
}

// StreamCycle applies one streams cycle atomically (spec 10): state ops,
// sink pushes (as /push) and the source ack commit as one transaction whose
// Tx entry also carries the state ops (walentry.TxRecord version 2): after a crash
// at any instant either all of the cycle is visible or none of it. Cycles of
// one (query, partition) shard are serialised by the source partition's lock.
//
// The steps: checkCycle (400s), cycleResolve (query, partition, op types,
// ack fields), cyclePrecheck (the ack, before any sink queue is created),
// txTargets (the sink partitions), then with every partition locked
// cycleStageState, txStagePushes, cycleStageAck, and txCommit (the commit
// point, which also applies the state ops to the store).
//
// Errors: ErrBadRequest (missing query_id or partition_id, a broken limit),
// ErrClosed, storage errors. A cycle that cannot apply is a result with Success=false.
func (b *Broker) StreamCycle(req StreamCycleRequest) (StreamCycleResult, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return StreamCycleResult{}, err
	}
	defer b.leave()
	c := &cycleRun{req: &req, res: StreamCycleResult{QueryID: req.QueryID, PartitionID: req.PartitionID}}
	if err := checkCycle(&req); err != nil {
		return c.res, err
	}
	if req.Group == "" {
		req.Group = QueueModeGroup
	}
	b.streams.regMu.RLock()
	msg, err := b.cycle(c)
	b.streams.regMu.RUnlock()
	switch {
	case err != nil:
		return c.res, err
	case msg != "":
		b.streams.failed.Add(1)
		return StreamCycleResult{QueryID: req.QueryID, PartitionID: req.PartitionID, QueueName: c.res.QueueName, Error: msg}, nil
	}
	b.streams.cycles.Add(1)
	c.res.Success = true
	return c.res, nil
}

// cycle runs the steps of StreamCycle; msg is why the cycle does not apply.
func (b *Broker) cycle(c *cycleRun) (msg string, err error) {
	if msg := b.cycleResolve(c); msg != "" {
		return msg, nil
	}
	c.t = &txRun{txID: newV7()}
	c.t.res.TransactionID = uuidString(c.t.txID)
	for _, it := range c.req.Push {
		c.t.ops = append(c.t.ops, TxOp{Type: "push", Push: it})
	}
	if _, err := c.t.sortOps(); err != nil {
		return "", err
	}
	if msg, err := b.cyclePrecheck(c); err != nil || msg != "" {
		return msg, err
	}
	if at, _, err := b.txTargets(c.t); err != nil || at >= 0 {
		return "", err
	}
	locked := lockPartitions(append(append([]*partition(nil), c.t.opPart...), c.src))
	defer b.txFinish(c.t, locked)
	if c.src.deleted {
		return "Partition not found", nil
	}
	if at, msg, err := b.txCheckLocked(c.t, locked); err != nil || at >= 0 {
		return msg, err
	}
	t := c.t
	t.now = b.now().UnixMicro()
	t.results = make([]TxOpResult, len(t.ops))
	t.rec = walentry.TxRecord{TxID: t.txID, TS: t.now}
	if err := b.cycleStageState(c); err != nil {
		return "", err
	}
	if err := b.txStagePushes(t); err != nil {
		return "", err
	}
	if msg, err := b.cycleStageAck(c); err != nil || msg != "" {
		return msg, err
	}
	t.rec.Streams = []streams.Change{c.change}
	if err := b.txCommit(t); err != nil {
		return "", err
	}
	if c.forgetClaimed {
		c.src.forgetClaimedLocked(&b.claimed, c.req.Group)
	}
	t.res.Success = true // counted in the series by txFinish
	c.res.StateOpsApplied = len(c.change.Ops)
	c.res.PushResults = make([]PushResult, len(t.results))
	for i, r := range t.results {
		it := &t.ops[i].Push
		pr := PushResult{Status: PushQueued, MessageID: r.MessageID, TransactionID: r.TransactionID,
			PartitionID: r.PartitionID, Partition: t.pushKeys[i].partition, TraceID: it.TraceID, Queue: r.QueueName}
		if r.Duplicate {
			pr.Status = PushDuplicate
		}
		c.res.PushResults[i] = pr
	}
	return "", nil
}

// checkCycle is the 400 rules of a cycle: the ids, and the store's limits
// (api_streams.go), checked before anything is looked at.
func checkCycle(req *StreamCycleRequest) error {
	switch {
	case req.QueryID == "":
		return BadRequest("query_id is required")
	case req.PartitionID == "":
		return BadRequest("partition_id is required")
	case len(req.StateOps) > MaxStreamOpsPerCycle:
		return BadRequest(fmt.Sprintf("state_ops holds %d operations, at most %d", len(req.StateOps), MaxStreamOpsPerCycle))
	}
	for i, op := range req.StateOps {
		switch {
		case len(op.Key) > MaxStreamKeyBytes:
			return BadRequest(fmt.Sprintf("state_ops[%d]: key of %d bytes, at most %d", i, len(op.Key), MaxStreamKeyBytes))
		case !utf8.ValidString(op.Key):
			return BadRequest(fmt.Sprintf("state_ops[%d]: key must be valid UTF-8", i))
		case len(op.Value) > MaxStreamValueBytes:
			return BadRequest(fmt.Sprintf("state_ops[%d]: value of %d bytes, at most %d", i, len(op.Value), MaxStreamValueBytes))
		}
	}
	return nil
}

// cycleResolve finds the query and the source partition and checks the op
// types and the ack's fields; the answer names what makes the cycle fail.
func (b *Broker) cycleResolve(c *cycleRun) string {
	qid, ok := parseID(c.req.QueryID)
	if ok {
		c.q, ok = b.streams.store.Query(qid)
	}
	if !ok {
		return "Query not found: " + c.req.QueryID
	}
	pid, ok := parseID(c.req.PartitionID)
	if ok {
		c.src = b.lookupPartitionByID(pid)
	}
	if c.src == nil {
		return "Partition not found: " + c.req.PartitionID
	}
	c.res.QueueName = c.src.q.name
	for _, op := range c.req.StateOps {
		if op.Type != "upsert" && op.Type != "delete" {
			return "Unknown state_op type: " + op.Type
		}
	}
	if a := c.req.Ack; a != nil {
		if a.TransactionID == "" {
			return "ack.transactionId is required"
		}
		if _, ok := streamAckStatuses[a.Status]; !ok {
			return "Unknown ack.status: " + a.Status
		}
	}
	return ""
}

// cycleStageState builds the cycle's Change (updated_at = the cycle's time)
// and refuses one that would leave its shard over MaxStreamKeysPerShard or
// MaxStreamShardBytes.
func (b *Broker) cycleStageState(c *cycleRun) error {
	c.change = streams.Change{Query: c.q.ID, Partition: c.src.id, Ops: make([]streams.Op, len(c.req.StateOps))}
	for i, op := range c.req.StateOps {
		// Not copied: the store keeps the caller's bytes (StreamStateOp.Value
		// says so; the HTTP decoder's are its own copy).
		o := streams.Op{Kind: streams.OpUpsert, Key: op.Key, Value: op.Value, UpdatedAtMicros: c.t.now}
		if op.Type == "delete" {
			o.Kind, o.Value = streams.OpDelete, nil
		} else if op.Value == nil {
			o.Value = []byte("{}")
		}
		c.change.Ops[i] = o
	}
	n, size := b.streams.store.SizeAfter(&c.change)
	switch {
	case n > MaxStreamKeysPerShard:
		return BadRequest(fmt.Sprintf("the cycle would leave %d keys in the shard, at most %d", n, MaxStreamKeysPerShard))
	case size > MaxStreamShardBytes:
		return BadRequest(fmt.Sprintf("the cycle would leave %d bytes of keys and values in the shard, at most %d", size, MaxStreamShardBytes))
	}
	return nil
}
