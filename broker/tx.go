package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/combmq/comb/walentry"

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
// The steps, in order: txSortOps, txTargets, txCheckLocked, txStagePushes,
// txStageAcks, txCommit (the commit point), txFinish (after the unlock).
//
// Errors: ErrBadRequest for an empty operation list or a bad name, ErrClosed,
// storage errors. An aborted transaction is a result with Success=false.
func (b *Broker) Transaction(ops []TxOp) (TxResult, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return TxResult{}, err
	}
	defer b.leave()
	t := &txRun{ops: ops, txID: newV7()}
	t.res = TxResult{TransactionID: uuidString(t.txID)}
	if len(ops) == 0 {
		return t.res, BadRequest("operations array cannot be empty")
	}
	if unknown, err := t.sortOps(); err != nil {
		return t.res, err
	} else if unknown != "" {
		t.res.Error = "Unknown operation type: " + unknown
		return t.res, nil
	}
	if at, msg, err := b.txTargets(t); err != nil || at >= 0 {
		return b.txAbortOrErr(t, at, msg, err)
	}
	locked := lockPartitions(t.opPart)
	defer b.txFinish(t, locked)
	if at, msg, err := b.txCheckLocked(t, locked); err != nil || at >= 0 {
		return b.txAbortOrErr(t, at, msg, err)
	}
	t.now = b.now().UnixMicro()
	t.results = make([]TxOpResult, len(ops))
	t.rec = walentry.TxRecord{TxID: t.txID, TS: t.now}
	if err := b.txStagePushes(t); err != nil {
		return t.res, err
	}
	if at, msg, err := b.txStageAcks(t); err != nil || at >= 0 {
		return b.txAbortOrErr(t, at, msg, err)
	}
	if len(t.rec.States) > 0 || len(t.rec.Pushes) > 0 || len(t.rec.DLQ) > 0 {
		if err := b.txCommit(t); err != nil {
			return t.res, err
		}
	} else if err := b.txWaitDuplicates(t); err != nil {
		return t.res, err
	}
	t.res.Success = true
	t.res.Results = t.results
	return t.res, nil
}

// txRun is one transaction on its way through the steps of Transaction.
type txRun struct {
	ops  []TxOp
	txID [16]byte
	res  TxResult // the answer so far: its TransactionID

	pushKeys []partKey         // the (queue, partition) of each push op, in op order
	pushOps  []int             // the op index of each push op
	opPart   []*partition      // per op, its target partition (after txTargets)
	now      int64             // µs, the transaction's one timestamp
	results  []TxOpResult      // per op, once staged
	rec      walentry.TxRecord // the commit-log entry being built
	sets     []txStateSet      // the states the entry changes, set after the commit point
	pubs     []published       // partitions to publish once unlocked
	// dupWait is what the push duplicates' answers wait for (findStored;
	// zero = nothing), dupPubs what they name, published with pubs.
	dupWait  walTicket
	dupPubs  []published
	releases []partKeyed // leases released, for the ready structures once unlocked
}

// txStateSet is one (partition, group) state a transaction changes.
type txStateSet struct {
	k        cursor.Key
	p        *partition
	post     lease.State
	released bool // the state held a lease that the new one does not
}

// sortOps validates the push items, gives ack ops their default group and
// collects the push targets. It returns the type of an unknown op, if any
// (an answer with an error, not a Go error: spec 5.3).
func (t *txRun) sortOps() (unknown string, err error) {
	for i := range t.ops {
		switch t.ops[i].Type {
		case "push":
			it := &t.ops[i].Push
			if err := validatePushItems([]PushItem{*it}); err != nil {
				return "", err
			}
			k := partKey{it.Queue, it.Partition}
			if k.partition == "" {
				k.partition = DefaultPartition
			}
			t.pushKeys = append(t.pushKeys, k)
			t.pushOps = append(t.pushOps, i)
		case "ack":
			if t.ops[i].Group == "" {
				t.ops[i].Group = QueueModeGroup
			}
		default:
			return t.ops[i].Type, nil
		}
	}
	return "", nil
}

// txTargets resolves every op to its partition. Acks are validated before
// any queue or partition a push names is created (spec 5.2, all or nothing),
// so an aborted transaction leaves no trace. They are evaluated again with
// every partition locked (txStageAcks); the state may move in between, so
// that pass can still abort (after creating the push targets, a race only).
// It returns the index and reason of the op that aborts, or -1.
func (b *Broker) txTargets(t *txRun) (int, string, error) {
	t.opPart = make([]*partition, len(t.ops))
	for i := range t.ops {
		if t.ops[i].Type != "ack" {
			continue
		}
		id, ok := parseID(t.ops[i].Ack.PartitionID)
		p := b.lookupPartitionByID(id)
		if !ok || p == nil {
			return i, "Message not found", nil
		}
		t.opPart[i] = p
	}
	if at, msg, err := b.txAckAbort(t.ops, t.opPart); err != nil || at >= 0 {
		return at, msg, err
	}
	pushParts, err := b.ensurePartitions(t.pushKeys)
	if err != nil {
		return -1, "", err
	}
	for j, i := range t.pushOps {
		t.opPart[i] = pushParts[j]
	}
	return -1, "", nil
}

// txAbortOrErr is the answer of a step that failed (err) or aborted the
// transaction at op at.
func (b *Broker) txAbortOrErr(t *txRun, at int, msg string, err error) (TxResult, error) {
	if err != nil {
		return t.res, err
	}
	return b.txAbort(t.res, t.ops, at, msg), nil
}

// txCheckLocked aborts a transaction that names a partition deleted since it
// was looked up, and fails one on a damaged partition.
// The caller holds p.mu of every partition in locked.
func (b *Broker) txCheckLocked(t *txRun, locked []*partition) (int, string, error) {
	for _, p := range locked {
		if p.deleted {
			return slices.Index(t.opPart, p), "Queue was deleted", nil
		}
		if err := p.damagedErr(); err != nil {
			return -1, "", err
		}
	}
	return -1, "", nil
}

// txFinish runs after the partition locks are released, however Transaction
// ends: publishing takes the queue lock, which is ordered before partition
// locks, and so does telling the ready structures about released leases.
func (b *Broker) txFinish(t *txRun, locked []*partition) {
	unlockPartitions(locked)
	countTx(t)
	for _, x := range t.pubs {
		// Push maintenance holds transaction pushes too (meta_maint.go);
		// the messages are durable either way, so a failed write of the
		// maintenance file is only logged.
		if _, err := b.publishOrHold(x.p, x.next, x.ts); err != nil {
			b.log.Error().Err(err).Str("partitionId", x.p.idStr).Msg("transaction push held, maintenance file not written")
		}
	}
	for _, r := range t.releases {
		b.leaseReleased(r.p, r.group, b.now().UnixMicro())
	}
}

// txStagePushes assigns ids to the push ops and adds them to the entry, as
// /push does: a transactionId already stored in the partition, or repeated
// within the transaction, is a duplicate that writes nothing.
func (b *Broker) txStagePushes(t *txRun) error {
	var ids idSeq
	pushIdx := make(map[*partition]int)
	seen := make(map[*partition]map[string]string)
	for _, i := range t.pushOps {
		p, it := t.opPart[i], &t.ops[i].Push
		r := TxOpResult{Index: i, Type: "push", Success: true, PartitionID: p.idStr, QueueName: p.q.name, TransactionID: it.TransactionID}
		if it.TransactionID != "" {
			msgID, dup, err := b.txStoredID(t, p, it.TransactionID, seen[p])
			if err != nil {
				return err
			}
			if dup {
				r.MessageID, r.Duplicate = msgID, true
				t.results[i] = r
				continue
			}
		}
		id, err := ids.id()
		if err != nil {
			return err
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
			return err
		}
		j, ok := pushIdx[p]
		if !ok {
			j = len(t.rec.Pushes)
			pushIdx[p] = j
			t.rec.Pushes = append(t.rec.Pushes, walentry.TxPush{Partition: p.id})
		}
		t.rec.Pushes[j].Recs = append(t.rec.Pushes[j].Recs, segment.Record{ID: id, TransactionID: r.TransactionID,
			TraceID: it.TraceID, ProducerSub: it.ProducerSub, Payload: payload})
		t.results[i] = r
	}
	return nil
}

// txStoredID looks txid up among the ids this transaction already gave p
// (seen) and then in p's log: a hit is the message id of the duplicate. A
// hit in the log adds what its answer waits for to t (findStored).
func (b *Broker) txStoredID(t *txRun, p *partition, txid string, seen map[string]string) (string, bool, error) {
	if id, dup := seen[txid]; dup {
		return id, true, nil
	}
	st, wait, err := b.findStoredOne(p, txid)
	if err != nil {
		return "", false, b.storageErr(p, err)
	}
	if !st.ok {
		return "", false, nil
	}
	if wait.Appended() {
		t.dupWait = later(t.dupWait, wait)
		t.dupPubs = append(t.dupPubs, published{p, st.off + 1, t.now})
	}
	return uuidString(st.id), true, nil
}

// txWaitDuplicates waits until the records the transaction's duplicates name
// are durable (write_durable.go): before the commit point, so that a record
// no entry will cover (findStored's failedTicket) fails the transaction
// while nothing of it is committed. What they name is published with the
// transaction's pushes. Nothing to wait for is the common case: a retried
// transaction whose first try was answered.
func (b *Broker) txWaitDuplicates(t *txRun) error {
	if !t.dupWait.Appended() {
		return nil
	}
	if err := t.dupWait.Wait(); err != nil {
		return fmt.Errorf("broker: commit log: %w", err)
	}
	t.pubs = append(t.pubs, t.dupPubs...)
	return nil
}

// txStageAcks computes the ack outcomes on copies of the states (spec 5.2)
// and adds the changed states and DLQ entries to the entry; nothing is set
// yet. It returns the index and reason of the op that aborts, or -1.
func (b *Broker) txStageAcks(t *txRun) (int, string, error) {
	keys, acksBy := groupTxAcks(t.ops, t.opPart)
	for _, k := range keys {
		if at, msg, err := b.txStageAck(t, k, acksBy[k]); err != nil || at >= 0 {
			return at, msg, err
		}
	}
	return -1, "", nil
}

// txStageAck stages the acks of one (partition, group); see txStageAcks.
func (b *Broker) txStageAck(t *txRun, k txAckKey, acks []lease.Ack) (int, string, error) {
	ck := cursor.Key{Partition: k.p.id, Group: k.group}
	pre, had := b.cur.Get(ck)
	if err := b.resolveAckOffsetsLocked(k.p, k.group, acks, func(i int) string { return t.ops[i].Ack.TransactionID }, pre.Lease); err != nil {
		return -1, "", b.storageErr(k.p, err)
	}
	st := pre
	out, changed, abort := lease.ApplyAcks(&st, acks, k.p.q.options().RetryLimit, t.now, true)
	if at, msg := failedAck(out, abort); at >= 0 {
		return at, msg, nil
	}
	var dlq []dlqItem
	for j, o := range out {
		i := o.Index
		t.results[i] = TxOpResult{Index: i, Type: "ack", Success: true, TransactionID: t.ops[i].Ack.TransactionID, DLQ: o.DLQ}
		if o.DLQ {
			dlq = append(dlq, dlqItem{offset: acks[j].Offset, group: k.group, errMsg: t.ops[i].Ack.Error})
		}
	}
	if len(dlq) > 0 {
		recs, err := b.buildDLQRecordsLocked(k.p, dlq, t.now, "Unknown error", fmt.Sprintf("tx/%s/%d", t.res.TransactionID, len(t.rec.DLQ)))
		if err != nil {
			return -1, "", err
		}
		for _, r := range recs {
			t.rec.DLQ = append(t.rec.DLQ, walentry.TxDLQ{Queue: k.p.q.id, Rec: r})
		}
	}
	if changed {
		t.rec.States = append(t.rec.States, walentry.TxState{Partition: k.p.id, Group: k.group, HadPre: had, Pre: pre, Post: st})
		t.sets = append(t.sets, txStateSet{k: ck, p: k.p, post: st, released: pre.Lease.Held() && st.Lease.ID != pre.Lease.ID})
	}
	return -1, "", nil
}

// txCommit waits for what its duplicates name (txWaitDuplicates), appends
// the transaction's entry and waits until it is durable: the commit point.
// Then it sets and checkpoints the new states and appends
// the pushes and DLQ entries. Until those effects are applied and
// checkpointed the entry is their only durable trace, so the flush pass keeps
// it (txInflight); a failure after the commit point keeps it until a restart
// finishes the transaction (open_recover.go).
func (b *Broker) txCommit(t *txRun) error {
	if err := b.txWaitDuplicates(t); err != nil {
		return err
	}
	tk, err := b.appendInflight(walTx, t.rec.Encode())
	if errors.Is(err, commitlog.ErrTooLarge) {
		return BadRequest("transaction too large: " + err.Error())
	}
	if err != nil {
		return b.noSpace("the commit log", fmt.Errorf("broker: commit log: %w", err))
	}
	lsn := uint64(tk.LSN)
	if err := tk.Wait(); err != nil {
		return fmt.Errorf("broker: commit log: %w", err)
	}
	if h := b.hooks.afterTxCommitPoint; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	// A streams cycle's state ops: in the store (and its dirty set) before
	// the entry leaves the in-flight set, so no flush pass truncates past
	// them before a snapshot holds them.
	b.applyStreamChanges(lsn, &t.rec)
	for _, s := range t.sets {
		b.cur.Set(s.k, s.post)
		b.cursorChanged(s.p, s.k.Group)
		if s.released {
			t.releases = append(t.releases, partKeyed{s.p, s.k.Group})
		}
	}
	if err := b.cur.Wait(); err != nil {
		return b.closedErr(err)
	}
	pubs, err := b.applyRedoAppends(&t.rec, false)
	if err != nil {
		return err
	}
	t.pubs = append(t.pubs, pubs...)
	b.txApplied(lsn)
	return nil
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
		if err := b.resolveAckOffsetsLocked(k.p, k.group, acks, func(i int) string { return ops[i].Ack.TransactionID }, st.Lease); err != nil {
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
