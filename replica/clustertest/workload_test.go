//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

const (
	workQueue = "cq"    // pushed by the pushers, read by both working groups
	txQueue   = "cq-tx" // pushed by the transactions of txGroup
	ackGroup  = "ga"    // pops and acks through /ack/batch
	txGroup   = "gt"    // pops and acks through /transaction
)

var (
	workPartitions = []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	txPartitions   = []string{"t0", "t1"}
)

// workload is the load of the whole run: it keeps going through every fault.
type workload struct {
	c    *client
	led  *ledger
	seed uint64

	mu      sync.Mutex
	pending [][]pushItem // pushes the load stopped before any answer: re-sent at the end
}

// run starts the goroutines; stop cancels them and waits.
func (w *workload) run(pushers, consumers int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := func(stream uint64, f func(context.Context, int, *rand.Rand), id int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx, id, rand.New(rand.NewPCG(w.seed, stream)))
		}()
	}
	for i := 0; i < pushers; i++ {
		start(uint64(100+i), w.pusher, i)
	}
	for i := 0; i < consumers; i++ {
		start(uint64(200+i), w.ackConsumer, i)
		start(uint64(300+i), w.txConsumer, i)
	}
	start(400, w.groupReader, 0)
	start(401, w.groupReader, 1)
	return func() {
		cancel()
		wg.Wait()
	}
}

func (w *workload) pusher(ctx context.Context, id int, rng *rand.Rand) {
	seq := 0
	for ctx.Err() == nil {
		n := 1 + rng.IntN(10)
		part := workPartitions[rng.IntN(len(workPartitions))]
		items := make([]pushItem, n)
		for i := range items {
			seq++
			if rng.IntN(4) == 0 {
				part = workPartitions[rng.IntN(len(workPartitions))]
			}
			tx := fmt.Sprintf("w%d-%d", id, seq)
			payload, _ := json.Marshal(map[string]any{"tx": tx})
			items[i] = pushItem{Queue: workQueue, Partition: part, TransactionID: tx, Payload: payload}
		}
		w.pushUntilAnswered(ctx, rng, items)
		backoff(ctx, time.Duration(5+rng.IntN(25))*time.Millisecond)
	}
}

// pushUntilAnswered sends items (again after a 5xx or no answer, same transactionIds) until an
// answer arrives; when ctx ends first they are kept for the re-send at the end.
func (w *workload) pushUntilAnswered(ctx context.Context, rng *rand.Rand, items []pushItem) bool {
	w.led.sentPushes(items, "")
	ans, res, err := w.c.push(ctx, rng, items)
	switch {
	case err != nil && ans.status == http.StatusCreated:
		w.led.violate("0 protocol", "push answered 201 by %s with an undecodable body: %v", ans.node, err)
	case err != nil:
		w.mu.Lock()
		w.pending = append(w.pending, items)
		w.mu.Unlock()
		return false
	case ans.status == http.StatusCreated:
		w.led.pushAnswered(ans, items, res)
	default:
		w.led.violate("0 protocol", "push answered %d by %s at %s: %s", ans.status, ans.node, w.led.rel(ans.recv), trunc(ans.body))
	}
	return true
}

// resendPending re-sends every push the load left unanswered until each is answered.
func (w *workload) resendPending(ctx context.Context) (int, error) {
	w.mu.Lock()
	pend := w.pending
	w.pending = nil
	w.mu.Unlock()
	rng := rand.New(rand.NewPCG(w.seed, 999))
	for _, items := range pend {
		if !w.pushUntilAnswered(ctx, rng, items) {
			return 0, fmt.Errorf("re-sending %d unanswered pushes: %w", len(pend), ctx.Err())
		}
	}
	return len(pend), nil
}

// popOnce pops for group and records the answer; nil when nothing was delivered.
func (w *workload) popOnce(ctx context.Context, rng *rand.Rand, group string, q url.Values) *popAnswer {
	ans, pop, err := w.c.pop(ctx, rng, workQueue, q)
	switch {
	case err != nil && ans.status == http.StatusOK:
		w.led.violate("0 protocol", "pop answered 200 by %s with an undecodable body: %v", ans.node, err)
		return nil
	case err != nil:
		return nil
	case ans.status == http.StatusNoContent:
		w.led.popAnswered(ans)
		return nil
	case ans.status != http.StatusOK:
		w.led.violate("0 protocol", "pop answered %d by %s at %s: %s", ans.status, ans.node, w.led.rel(ans.recv), trunc(ans.body))
		backoff(ctx, 100*time.Millisecond)
		return nil
	}
	w.led.popAnswered(ans)
	if len(pop.Messages) == 0 {
		w.led.violate("0 protocol", "pop answered 200 with no messages by %s at %s", ans.node, w.led.rel(ans.recv))
		return nil
	}
	w.led.delivered(group, ans, pop)
	return pop
}

func workPop(group string, batch, partitions int, wait bool) url.Values {
	q := url.Values{}
	q.Set("consumerGroup", group)
	q.Set("batch", strconv.Itoa(batch))
	q.Set("partitions", strconv.Itoa(partitions))
	if wait {
		q.Set("wait", "true")
		q.Set("timeout", "500")
	}
	return q
}

// ackConsumer pops for ackGroup and acks all (most often), a prefix, nacks all with "retry"
// (the lease is released for redelivery), or does nothing (the lease runs out).
func (w *workload) ackConsumer(ctx context.Context, id int, rng *rand.Rand) {
	for ctx.Err() == nil {
		pop := w.popOnce(ctx, rng, ackGroup, workPop(ackGroup, 1+rng.IntN(20), 1+rng.IntN(2), true))
		if pop == nil {
			continue
		}
		backoff(ctx, time.Duration(rng.IntN(50))*time.Millisecond)
		k, status := len(pop.Messages), "completed"
		switch r := rng.IntN(20); {
		case r < 14:
		case r < 16:
			k = rng.IntN(k + 1)
		case r < 18:
			status = "retry"
		default:
			k = 0
		}
		if k > 0 {
			w.ack(ctx, rng, ackGroup, pop, pop.Messages[:k], status)
		}
	}
}

// ack acknowledges msgs (with the pop's lease) and records the request and its outcome.
func (w *workload) ack(ctx context.Context, rng *rand.Rand, group string, pop *popAnswer, msgs []popMessage, status string) {
	items := make([]ackItem, len(msgs))
	rec := &ackRec{group: group, leaseID: pop.LeaseID, via: "ack/batch", items: make([]ackItemRec, len(msgs))}
	for i, m := range msgs {
		items[i] = ackItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: pop.LeaseID, Status: status}
		rec.items[i] = ackItemRec{txid: m.TransactionID, partitionID: m.PartitionID, status: status}
	}
	ans, res, err := w.c.ackBatch(ctx, rng, group, items)
	rec.firstSent, rec.recv, rec.node, rec.uncertain = ans.firstSent, ans.recv, ans.node, ans.uncertain
	switch {
	case err != nil && ans.status == http.StatusOK:
		w.led.violate("0 protocol", "ack answered 200 by %s with an undecodable body: %v", ans.node, err)
	case err != nil:
		// no answer: every item's outcome stays unknown
	case ans.status != http.StatusOK:
		w.led.violate("0 protocol", "ack answered %d by %s at %s: %s", ans.status, ans.node, w.led.rel(ans.recv), trunc(ans.body))
	default:
		for _, r := range res {
			if r.Index < 0 || r.Index >= len(rec.items) {
				continue
			}
			if r.Success && (r.Error == nil || *r.Error == "") {
				rec.items[r.Index].outcome = applied
			} else {
				rec.items[r.Index].outcome = refused
				if r.Error != nil {
					rec.items[r.Index].err = *r.Error
				}
			}
		}
	}
	if !rec.firstSent.IsZero() {
		w.led.acked(rec)
	}
}

// txConsumer pops for txGroup and, for each pop (but one in ten, left to expire), commits one
// transaction: the acks of the popped messages and one derived message each to txQueue,
// transactionId "x-" + the popped one's.
func (w *workload) txConsumer(ctx context.Context, id int, rng *rand.Rand) {
	seq := 0
	for ctx.Err() == nil {
		pop := w.popOnce(ctx, rng, txGroup, workPop(txGroup, 1+rng.IntN(10), 1, true))
		if pop == nil || rng.IntN(10) == 0 {
			continue
		}
		seq++
		tx := &txRec{id: fmt.Sprintf("tx%d-%d", id, seq)}
		tx.ack = &ackRec{group: txGroup, leaseID: pop.LeaseID, via: "transaction " + tx.id}
		var ops []txOp
		var pushes []pushItem
		for _, m := range pop.Messages {
			x := "x-" + m.TransactionID
			payload, _ := json.Marshal(map[string]any{"from": m.TransactionID})
			// The partition follows from the message, so a second transaction for it (after a
			// redelivery) meets the first one's push in dedup.
			pushes = append(pushes, pushItem{Queue: txQueue, Partition: txPartitions[len(x)%len(txPartitions)], TransactionID: x, Payload: payload})
			tx.pushes = append(tx.pushes, x)
			ops = append(ops, txOp{Type: "ack", TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: pop.LeaseID, Status: "completed", ConsumerGroup: txGroup})
			tx.ack.items = append(tx.ack.items, ackItemRec{txid: m.TransactionID, partitionID: m.PartitionID, status: "completed"})
		}
		ops = append(ops, txOp{Type: "push", Items: pushes})
		w.led.sentPushes(pushes, tx.id)
		ans, res, err := w.c.transaction(ctx, rng, ops)
		tx.uncertain = ans.uncertain
		tx.ack.firstSent, tx.ack.recv, tx.ack.node, tx.ack.uncertain = ans.firstSent, ans.recv, ans.node, ans.uncertain
		switch {
		case err != nil && ans.status == http.StatusOK:
			w.led.violate("0 protocol", "transaction answered 200 by %s with an undecodable body: %v", ans.node, err)
		case err != nil:
			tx.outcome = unknown
		case ans.status != http.StatusOK:
			w.led.violate("0 protocol", "transaction answered %d by %s at %s: %s", ans.status, ans.node, w.led.rel(ans.recv), trunc(ans.body))
			tx.outcome = refused
		case res.Success:
			tx.outcome = applied
		default:
			tx.outcome, tx.err = refused, res.Error
		}
		for i := range tx.ack.items {
			tx.ack.items[i].outcome = tx.outcome
			tx.ack.items[i].err = tx.err
		}
		if tx.ack.firstSent.IsZero() {
			tx.ack = nil
		}
		w.led.txDone(tx, ans, res)
	}
}

// drainGroup pops for group until a pop answers 204 and acks each answer in full: what the
// group had left once the load stopped and every lease ran out.
func (w *workload) drainGroup(ctx context.Context, group string) (int, error) {
	rng := rand.New(rand.NewPCG(w.seed, 777))
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("drain %s: %w", group, err)
		}
		pop := w.popOnce(ctx, rng, group, workPop(group, 500, len(workPartitions), false))
		if pop == nil {
			return n, ctx.Err()
		}
		n += len(pop.Messages)
		w.ack(ctx, rng, group, pop, pop.Messages, "completed")
	}
}
