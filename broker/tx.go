package broker

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// errTxInjected is what a crash-test hook returns to stop a transaction
// between its commit point and its appends.
var errTxInjected = errors.New("transaction stopped by a test hook")

type txAckKey struct {
	p     *partition
	group string
}

// Transaction applies pushes and acks all or nothing (spec 5), also across a
// crash at any point:
//
//  1. Everything is validated and the ack outcomes are computed on copies of
//     the states with every touched partition locked (spec 5.2 semantics:
//     failed/dlq go straight to the DLQ; retry, Message not found or a bad
//     lease abort: nothing applied, success=false).
//  2. One commit-log entry (walTx) holding the pushed messages (ids
//     assigned), the DLQ entries and each state's before and after is
//     appended, and Transaction waits until it is durable. That is the
//     commit point.
//  3. The new states are set and checkpointed, then the pushes and DLQ
//     entries are appended (with their own commit-log entries).
//
// A crash after 2 is finished by Open, which replays the entry (replayTx):
// pushes missing from their partition (dedup by transactionId) are appended,
// states still equal to their "before" get their "after". A crash before 2
// leaves no trace. Push duplicates are `duplicate` with success=true (spec 11
// #42), so a retried transaction is idempotent.
//
// Errors: ErrBadRequest for an empty operation list or a bad name, ErrClosed,
// storage errors. An aborted transaction is a result with Success=false.
func (b *Broker) Transaction(ops []TxOp) (TxResult, error) {
	if err := b.enter(); err != nil {
		return TxResult{}, err
	}
	defer b.leave()
	txID := newV7()
	res := TxResult{TransactionID: uuidString(txID)}
	if len(ops) == 0 {
		return res, BadRequest("operations array cannot be empty")
	}
	var pushKeys []partKey
	var pushOps []int
	for i := range ops {
		switch ops[i].Type {
		case "push":
			it := &ops[i].Push
			if err := validatePushItems([]PushItem{*it}); err != nil {
				return res, err
			}
			k := partKey{it.Queue, it.Partition}
			if k.partition == "" {
				k.partition = DefaultPartition
			}
			pushKeys = append(pushKeys, k)
			pushOps = append(pushOps, i)
		case "ack":
			if ops[i].Group == "" {
				ops[i].Group = QueueModeGroup
			}
		default:
			res.Error = "Unknown operation type: " + ops[i].Type
			return res, nil
		}
	}
	opPart := make([]*partition, len(ops))
	for i := range ops {
		if ops[i].Type != "ack" {
			continue
		}
		id, ok := parseID(ops[i].Ack.PartitionID)
		p := b.lookupPartitionByID(id)
		if !ok || p == nil {
			return b.txAbort(res, ops, i, "Message not found"), nil
		}
		opPart[i] = p
	}
	// spec 5.2, all or nothing: the acks are validated before any queue or
	// partition a push names is created, so an aborted transaction leaves no
	// trace. They are evaluated again below with every partition locked; the
	// state may have moved in between, so that pass can still abort (after
	// creating the push targets, a race only).
	if at, msg, err := b.txAckAbort(ops, opPart); err != nil {
		return res, err
	} else if at >= 0 {
		return b.txAbort(res, ops, at, msg), nil
	}
	pushParts, err := b.ensurePartitions(pushKeys)
	if err != nil {
		return res, err
	}
	for j, i := range pushOps {
		opPart[i] = pushParts[j]
	}

	var pubs []published
	var releases []partKeyed
	locked := lockPartitions(opPart)
	defer func() {
		// Publish after unlocking: publish takes the queue lock, which is
		// ordered before partition locks.
		unlockPartitions(locked)
		for _, x := range pubs {
			// Push maintenance holds transaction pushes too (maintmode.go);
			// the messages are durable either way, so a failed write of the
			// maintenance file is only logged.
			if _, err := b.publishOrHold(x.p, x.next, x.ts); err != nil {
				b.log.Error().Err(err).Str("partitionId", x.p.idStr).Msg("transaction push held, maintenance file not written")
			}
		}
		for _, r := range releases {
			b.leaseReleased(r.p, r.group, b.now().UnixMicro())
		}
	}()
	for _, p := range locked {
		if p.deleted {
			return b.txAbort(res, ops, slices.Index(opPart, p), "Queue was deleted"), nil
		}
		if err := p.damagedErr(); err != nil {
			return res, err
		}
	}
	now := b.now().UnixMicro()
	results := make([]TxOpResult, len(ops))
	rec := redoRecord{TxID: txID, TS: now}

	// Pushes: dedup and ids, as /push.
	var ids idSeq
	pushIdx := make(map[*partition]int)
	seen := make(map[*partition]map[string]string)
	for _, i := range pushOps {
		p, it := opPart[i], &ops[i].Push
		r := TxOpResult{Index: i, Type: "push", Success: true, PartitionID: p.idStr, QueueName: p.q.name, TransactionID: it.TransactionID}
		if it.TransactionID != "" {
			if id, dup := seen[p][it.TransactionID]; dup {
				r.MessageID, r.Duplicate = id, true
				results[i] = r
				continue
			}
			_, id, ok, err := p.log.FindTransaction(it.TransactionID)
			if err != nil {
				return res, b.storageErr(p, fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err))
			}
			if ok {
				r.MessageID, r.Duplicate = uuidString(id), true
				results[i] = r
				continue
			}
		}
		id, err := ids.id()
		if err != nil {
			return res, err
		}
		r.MessageID = uuidString(id)
		if r.TransactionID == "" {
			r.TransactionID = r.MessageID
		}
		if seen[p] == nil {
			seen[p] = make(map[string]string)
		}
		seen[p][r.TransactionID] = r.MessageID
		payload := it.Payload
		if payload == nil {
			payload = nullJSON
		}
		// spec 9.2: sealed before the redo record, so the journal never holds the plaintext.
		if payload, err = b.storedPayload(p.q, payload); err != nil {
			return res, err
		}
		j, ok := pushIdx[p]
		if !ok {
			j = len(rec.Pushes)
			pushIdx[p] = j
			rec.Pushes = append(rec.Pushes, redoPush{Partition: p.id})
		}
		rec.Pushes[j].Recs = append(rec.Pushes[j].Recs, segment.Record{ID: id, TransactionID: r.TransactionID,
			TraceID: it.TraceID, ProducerSub: it.ProducerSub, Payload: payload})
		results[i] = r
	}

	// Acks: outcomes on copies of the states (spec 5.2).
	keys, acksBy := groupTxAcks(ops, opPart)
	type newState struct {
		k        cursor.Key
		p        *partition
		post     lease.State
		released bool
	}
	var sets []newState
	for _, k := range keys {
		acks := acksBy[k]
		ck := cursor.Key{Partition: k.p.id, Group: k.group}
		pre, had := b.cur.Get(ck)
		if err := b.resolveOffsetsLocked(k.p, acks, func(i int) string { return ops[i].Ack.TransactionID }, pre.Lease); err != nil {
			return res, b.storageErr(k.p, err)
		}
		st := pre
		out, changed, abort := lease.ApplyAcks(&st, acks, k.p.q.options().RetryLimit, now, true)
		if at, msg := failedAck(out, abort); at >= 0 {
			return b.txAbort(res, ops, at, msg), nil
		}
		var dlq []dlqItem
		for j, o := range out {
			i := o.Index
			results[i] = TxOpResult{Index: i, Type: "ack", Success: true, TransactionID: ops[i].Ack.TransactionID, DLQ: o.DLQ}
			if o.DLQ {
				dlq = append(dlq, dlqItem{offset: acks[j].Offset, group: k.group, errMsg: ops[i].Ack.Error})
			}
		}
		if len(dlq) > 0 {
			recs, err := b.buildDLQRecordsLocked(k.p, dlq, now, "Unknown error", fmt.Sprintf("tx/%s/%d", res.TransactionID, len(rec.DLQ)))
			if err != nil {
				return res, err
			}
			for _, r := range recs {
				rec.DLQ = append(rec.DLQ, redoDLQ{Queue: k.p.q.id, Rec: r})
			}
		}
		if changed {
			rec.States = append(rec.States, redoState{Partition: k.p.id, Group: k.group, HadPre: had, Pre: pre, Post: st})
			sets = append(sets, newState{k: ck, p: k.p, post: st, released: pre.Lease.Held() && st.Lease.ID != pre.Lease.ID})
		}
	}

	if len(rec.States) > 0 || len(rec.Pushes) > 0 || len(rec.DLQ) > 0 {
		// The commit point: the transaction's commit-log entry is durable.
		t, err := b.wal.Append(walTx, rec.encode())
		if errors.Is(err, commitlog.ErrTooLarge) {
			return res, BadRequest("transaction too large: " + err.Error())
		}
		if err != nil {
			return res, fmt.Errorf("broker: commit log: %w", err)
		}
		if err := t.Wait(); err != nil {
			return res, fmt.Errorf("broker: commit log: %w", err)
		}
		// Committed: until its effects are applied and checkpointed, the
		// entry is their only durable trace, so the flush pass keeps it
		// (a failure below keeps it until a restart finishes the
		// transaction, recover.go).
		lsn := t.LSN()
		b.txInflight(lsn)
		if h := b.hooks.afterTxCommitPoint; h != nil {
			if err := h(); err != nil {
				return res, err
			}
		}
		for _, s := range sets {
			b.cur.Set(s.k, s.post)
			b.cursorChanged(s.p, s.k.Group)
			if s.released {
				releases = append(releases, partKeyed{s.p, s.k.Group})
			}
		}
		if err := b.cur.Wait(); err != nil {
			return res, b.closedErr(err)
		}
		pubs, err = b.applyRedoAppends(&rec, false)
		if err != nil {
			return res, err
		}
		b.txApplied(lsn)
	}
	res.Success = true
	res.Results = results
	return res, nil
}

// groupTxAcks groups the ack ops by (partition, consumer group), in first
// appearance order.
func groupTxAcks(ops []TxOp, opPart []*partition) ([]txAckKey, map[txAckKey][]lease.Ack) {
	var keys []txAckKey
	acksBy := make(map[txAckKey][]lease.Ack)
	for i := range ops {
		if ops[i].Type != "ack" {
			continue
		}
		k := txAckKey{opPart[i], ops[i].Group}
		if _, ok := acksBy[k]; !ok {
			keys = append(keys, k)
		}
		a := lease.Ack{Index: i, Status: lease.ParseStatus(ops[i].Ack.Status), RawStatus: ops[i].Ack.Status}
		if ops[i].Ack.LeaseID != "" {
			a.HasLeaseID = true
			a.LeaseID, _ = parseID(ops[i].Ack.LeaseID)
		}
		acksBy[k] = append(acksBy[k], a)
	}
	return keys, acksBy
}

// txAckAbort evaluates a transaction's ack ops (spec 5.2) on copies of their
// states, under their partitions' locks, and changes nothing. It returns the
// index and error of the op that aborts the transaction, or -1.
func (b *Broker) txAckAbort(ops []TxOp, opPart []*partition) (int, string, error) {
	keys, acksBy := groupTxAcks(ops, opPart)
	if len(keys) == 0 {
		return -1, "", nil
	}
	locked := lockPartitions(opPart)
	defer unlockPartitions(locked)
	now := b.now().UnixMicro()
	for _, k := range keys {
		if k.p.deleted {
			return acksBy[k][0].Index, "Message not found", nil
		}
		if err := k.p.damagedErr(); err != nil {
			return -1, "", err
		}
		acks := acksBy[k]
		st, _ := b.cur.Get(cursor.Key{Partition: k.p.id, Group: k.group})
		if err := b.resolveOffsetsLocked(k.p, acks, func(i int) string { return ops[i].Ack.TransactionID }, st.Lease); err != nil {
			return -1, "", b.storageErr(k.p, err)
		}
		out, _, abort := lease.ApplyAcks(&st, acks, k.p.q.options().RetryLimit, now, true)
		if at, msg := failedAck(out, abort); at >= 0 {
			return at, msg, nil
		}
	}
	return -1, "", nil
}

// failedAck returns the index and reason of the ack that fails a transaction, or -1. On an
// abort lease.ApplyAcks leaves the valid acks unapplied (Success false, no Error), so the one
// to name is the first with an Error, not the first without Success: naming a valid ack that
// came first answered the transaction with an empty error (issue 10).
func failedAck(out []lease.Outcome, abort bool) (int, string) {
	for _, o := range out {
		if o.Error != "" {
			return o.Index, o.Error
		}
	}
	for _, o := range out {
		if !o.Success || abort {
			return o.Index, "Transaction aborted"
		}
	}
	return -1, ""
}

func (b *Broker) closedErr(err error) error {
	if errors.Is(err, cursor.ErrClosed) {
		return ErrClosed
	}
	return err
}

// txAbort is the answer of an aborted transaction: results of the operations
// before the failing one, then the failing one with its error msg. The
// transaction's error names the failing operation, its flattened index and
// kind, and the reason: "Operation 1 (ack) failed: Invalid or expired lease"
// (spec 5.3: `error` is present when success is false).
func (b *Broker) txAbort(res TxResult, ops []TxOp, failed int, msg string) TxResult {
	if msg == "" {
		msg = "Transaction aborted"
	}
	res.Success = false
	res.Error = fmt.Sprintf("Operation %d (%s) failed: %s", failed, ops[failed].Type, msg)
	res.Results = make([]TxOpResult, 0, failed+1)
	for i := 0; i <= failed && i < len(ops); i++ {
		r := TxOpResult{Index: i, Type: ops[i].Type}
		if ops[i].Type == "ack" {
			r.TransactionID = ops[i].Ack.TransactionID
		} else {
			r.TransactionID = ops[i].Push.TransactionID
		}
		if i == failed {
			r.Error = msg
		}
		res.Results = append(res.Results, r)
	}
	return res
}

// lockPartitions locks the distinct partitions of ps in id order (the one
// order every multi-partition lock holder uses) and returns them.
func lockPartitions(ps []*partition) []*partition {
	seen := make(map[*partition]bool)
	var out []*partition
	for _, p := range ps {
		if p != nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].id[:], out[j].id[:]) < 0 })
	for _, p := range out {
		p.mu.Lock()
	}
	return out
}

func unlockPartitions(ps []*partition) {
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].mu.Unlock()
	}
}

// applyRedoAppends appends a committed transaction's pushes and DLQ entries
// and makes them durable. With replay, records already present (found by
// transactionId, or by DLQ key) are skipped, so applying twice is harmless.
// The caller holds the touched partitions' locks (or runs inside Open).
func (b *Broker) applyRedoAppends(rec *redoRecord, replay bool) ([]published, error) {
	var touched []*partition
	var nexts []uint64
	for _, push := range rec.Pushes {
		p := b.lookupPartitionByID(push.Partition)
		if p == nil {
			continue // queue deleted since
		}
		recs := push.Recs
		if replay {
			recs = recs[:0:0]
			for _, r := range push.Recs {
				_, _, ok, err := p.log.FindTransaction(r.TransactionID)
				if err != nil {
					return nil, fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
				}
				if !ok {
					recs = append(recs, r)
				}
			}
			if len(recs) == 0 {
				continue
			}
			b.log.Warn().Str("tx", uuidString(rec.TxID)).Str("queue", p.q.name).Str("partition", p.name).
				Int("messages", len(recs)).Msg("recovery: re-applied the pushes of a committed transaction")
		}
		ts := max(rec.TS, p.log.LastTimestamp())
		var first uint64
		var err error
		if replay {
			// Start-up: the transaction's entry covers these; the
			// recovery flush syncs them.
			if first, err = p.log.Append(ts, recs); err == nil {
				b.committer.Mark(p.log)
			}
		} else {
			var entry []byte
			var t walTicket
			first, err = b.appendLogged(p, ts, recs, &entry, &t)
		}
		if err != nil {
			return nil, fmt.Errorf("queue %s partition %s: append: %w", p.q.name, p.name, err)
		}
		touched = append(touched, p)
		nexts = append(nexts, first+uint64(len(recs)))
	}
	byQueue := make(map[[16]byte][]segment.Record)
	var qorder [][16]byte
	for _, d := range rec.DLQ {
		if _, ok := byQueue[d.Queue]; !ok {
			qorder = append(qorder, d.Queue)
		}
		byQueue[d.Queue] = append(byQueue[d.Queue], d.Rec)
	}
	for _, qid := range qorder {
		q := b.queueByID(qid)
		if q == nil {
			continue
		}
		if err := b.appendDLQ(q, rec.TS, byQueue[qid], replay); err != nil {
			return nil, err
		}
	}
	pubs := make([]published, len(touched))
	for i, p := range touched {
		pubs[i] = published{p, nexts[i], rec.TS}
	}
	return pubs, nil
}

// partKeyed is a (partition, consumer group) whose lease a transaction released.
type partKeyed struct {
	p     *partition
	group string
}

// published is a partition whose new messages are to be published once its
// lock is released.
type published struct {
	p    *partition
	next uint64
	ts   int64
}

func (b *Broker) queueByID(id [16]byte) *queue {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, q := range b.queues {
		if q.id == id {
			return q
		}
	}
	return nil
}
