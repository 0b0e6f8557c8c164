package powertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/combmq/comb/broker"
)

const (
	queueName = "power"
	workGroup = "work"
)

// load is one run's traffic between a reopen and the next cut.
type load struct {
	b          *broker.Broker
	led        *ledger
	run        int
	seed       uint64
	partitions []string
	seqs       []int // per pusher, carried across runs: transactionIds never repeat by accident
	txSeq      *int
}

// start runs pushers, consumers and a transaction worker until ctx ends and
// returns a func that waits for them.
func (w *load) start(ctx context.Context, pushers, consumers int) (wait func()) {
	var wg sync.WaitGroup
	rng := func(k int) *rand.Rand { return rand.New(rand.NewPCG(w.seed, uint64(w.run*1000+k))) }
	for i := range pushers {
		wg.Add(1)
		go func() { defer wg.Done(); w.pusher(ctx, i, rng(i)) }()
	}
	for i := range consumers {
		wg.Add(1)
		go func() { defer wg.Done(); w.consumer(ctx, rng(100+i)) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.transactor(ctx, rng(200)) }()
	return wg.Wait
}

func (w *load) item(rng *rand.Rand, tx, partition string) broker.PushItem {
	return broker.PushItem{Queue: queueName, Partition: partition, TransactionID: tx,
		Payload: fmt.Appendf(nil, `{"tx":%q,"run":%d,"pad":%q}`, tx, w.run, pad(rng.IntN(300)))}
}

// pusher sends pushes of 1-8 items to one or several partitions. One push in
// four loses its answer: the same items are sent again while the first is
// still in flight, as a client that timed out retries (issue 21 item 1).
func (w *load) pusher(ctx context.Context, id int, rng *rand.Rand) {
	for ctx.Err() == nil {
		items := make([]broker.PushItem, 1+rng.IntN(8))
		one := rng.IntN(2) == 0
		for i := range items {
			w.seqs[id]++
			part := w.partitions[rng.IntN(len(w.partitions))]
			if one && i > 0 {
				part = items[0].Partition
			}
			items[i] = w.item(rng, fmt.Sprintf("w%d-%d", id, w.seqs[id]), part)
		}
		pid := w.led.sent(w.run, items)
		if rng.IntN(4) == 0 {
			delay := time.Duration(rng.IntN(3000)) * time.Microsecond
			done := make(chan struct{})
			go func() {
				defer close(done)
				res, err := w.b.Push(items)
				w.led.answered(w.run, pid, items, res, err)
			}()
			sleepCtx(ctx, delay)
			res, err := w.b.Push(items)
			w.led.answered(w.run, pid, items, res, err)
			<-done
			continue
		}
		res, err := w.b.Push(items)
		w.led.answered(w.run, pid, items, res, err)
		if err != nil {
			sleepCtx(ctx, 2*time.Millisecond)
		}
	}
}

// consumer pops for the work group and, per message, acks it completed
// (most), fails it (retried, then dead-lettered: retryLimit 1) or leaves it
// for its lease to expire.
func (w *load) consumer(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		popClock := w.led.clock.Load()
		res, err := w.b.Pop(ctx, broker.PopRequest{Queue: queueName, Group: workGroup, Batch: 1 + rng.IntN(20),
			Partitions: 1 + rng.IntN(3), LeaseSeconds: 1, SubscriptionMode: "all"})
		if err != nil || len(res.Messages) == 0 {
			res.Release()
			sleepCtx(ctx, time.Millisecond)
			continue
		}
		msgs := append([]broker.Message(nil), res.Messages...)
		for i := range msgs {
			// A message's ID, like its Payload, is valid until Release (broker.Message):
			// the ledger reads it after.
			msgs[i].ID, msgs[i].Payload = strings.Clone(msgs[i].ID), nil
		}
		lease := res.LeaseID
		res.Release()
		w.led.delivered(w.run, popClock, msgs)
		var items []broker.AckItem
		failed := 0
		for _, m := range msgs {
			st := "completed"
			switch r := rng.IntN(20); {
			case r < 3:
				st = "failed"
				failed++
			case r < 5:
				continue
			}
			items = append(items, broker.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease, Status: st, Error: "power test"})
		}
		if len(items) == 0 {
			continue
		}
		out, err := w.b.Ack(workGroup, items)
		if err != nil {
			continue
		}
		var txs []string
		var dlq []bool
		for _, a := range out {
			if !a.Success || a.Index < 0 || a.Index >= len(items) {
				continue
			}
			it := items[a.Index]
			if it.Status == "failed" && !a.DLQ {
				continue // retried: delivered again later, as it should be
			}
			txs = append(txs, it.TransactionID)
			dlq = append(dlq, a.DLQ)
		}
		w.led.nacked(failed)
		w.led.ackAnswered(txs, dlq)
	}
}

// transactor runs transactions: a pop for the work group, then one
// transaction acking what it got and pushing 1-3 new messages.
func (w *load) transactor(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		popClock := w.led.clock.Load()
		res, err := w.b.Pop(ctx, broker.PopRequest{Queue: queueName, Group: workGroup, Batch: 1 + rng.IntN(5),
			Partitions: 1, LeaseSeconds: 1, SubscriptionMode: "all"})
		var ops []broker.TxOp
		var acked []string
		if err == nil {
			msgs := append([]broker.Message(nil), res.Messages...)
			lease := res.LeaseID
			w.led.delivered(w.run, popClock, msgs)
			for _, m := range msgs {
				ops = append(ops, broker.TxOp{Type: "ack", Group: workGroup, Ack: broker.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: lease, Status: "completed"}})
				acked = append(acked, m.TransactionID)
			}
		}
		res.Release()
		var pushes []broker.PushItem
		for range 1 + rng.IntN(3) {
			*w.txSeq++
			it := w.item(rng, fmt.Sprintf("t-%d", *w.txSeq), w.partitions[rng.IntN(len(w.partitions))])
			pushes = append(pushes, it)
			ops = append(ops, broker.TxOp{Type: "push", Push: it})
		}
		w.led.expect(w.run, pushes)
		out, err := w.b.Transaction(ops)
		if err != nil {
			sleepCtx(ctx, 2*time.Millisecond)
			continue
		}
		if !out.Success {
			continue // e.g. a lease expired in between: nothing was applied
		}
		w.led.txAnswered(w.run, pushes, out, acked)
	}
}

// resend re-sends every push no answer before the cut covered, with the same
// transactionIds, until each is answered: dedup must make each one message.
func resend(b *broker.Broker, led *ledger, run int) (int, error) {
	pend := led.takePending()
	for _, items := range pend {
		id := led.sent(run, items)
		var err error
		for try := 0; try < 50; try++ {
			var res []broker.PushResult
			if res, err = b.Push(items); err == nil {
				led.answered(run, id, items, res, nil)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			return 0, fmt.Errorf("re-sending a push whose answer was lost: %w", err)
		}
	}
	return len(pend), nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func pad(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}
