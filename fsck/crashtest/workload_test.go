//go:build crash

package crashtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

const (
	crashQueue = "crash"
	workGroup  = "work"
)

// workload is one epoch's traffic between a start and the next kill.
type workload struct {
	api        *api
	led        *ledger
	epoch      int
	seed       uint64
	partitions []string
	seqs       []int // per producer, carried across epochs so push order is checkable
}

// run starts pushers and consumers and returns a stop func that waits for them.
func (w *workload) run(pushers, consumers int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < pushers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			w.pusher(ctx, id, rand.New(rand.NewPCG(w.seed, uint64(w.epoch*1000+id))))
		}(i)
	}
	for i := 0; i < consumers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			w.consumer(ctx, rand.New(rand.NewPCG(w.seed, uint64(w.epoch*1000+500+id))))
		}(i)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

func (w *workload) pusher(ctx context.Context, id int, rng *rand.Rand) {
	for ctx.Err() == nil {
		n := 1 + rng.IntN(20)
		parts := 1 + rng.IntN(2)
		items := make([]pushItem, n)
		for i := range items {
			w.seqs[id]++
			tx := fmt.Sprintf("w%d-%d", id, w.seqs[id])
			part := w.partitions[rng.IntN(len(w.partitions))]
			if parts == 1 && i > 0 {
				part = items[0].Partition
			}
			payload, _ := json.Marshal(map[string]any{"tx": tx, "e": w.epoch, "pad": pad(rng.IntN(200))})
			items[i] = pushItem{Queue: crashQueue, Partition: part, TransactionID: tx, Payload: payload}
		}
		pid := w.led.sent(items)
		st, res, err := w.api.push(ctx, items)
		switch {
		case err != nil && st == http.StatusCreated:
			w.led.violate("push answered 201 with an undecodable body: %v", err)
		case err != nil || st >= 500 || st == 0:
			// No answer (killed) or a storage error: the push stays pending and is
			// re-sent after the restart with the same transactionIds.
			backoff(ctx, 5*time.Millisecond)
		case st == http.StatusCreated:
			w.led.answered(pid, items, res)
		default:
			w.led.violate("push answered %d", st)
		}
	}
}

func (w *workload) consumer(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		q := url.Values{}
		q.Set("batch", strconv.Itoa(1+rng.IntN(60)))
		q.Set("partitions", strconv.Itoa(1+rng.IntN(3)))
		q.Set("consumerGroup", workGroup)
		q.Set("wait", "true")
		q.Set("timeout", "300")
		q.Set("leaseSeconds", "2")
		popClock := w.led.clock.Load()
		st, ans, err := w.api.pop(ctx, crashQueue, q)
		if err != nil || st != http.StatusOK {
			if err == nil && st != http.StatusNoContent && st < 500 {
				w.led.violate("pop answered %d", st)
			}
			if err != nil || st != http.StatusNoContent {
				backoff(ctx, 5*time.Millisecond)
			}
			continue
		}
		w.led.delivered(popClock, ans.Messages)
		// Ack everything (most of the time), a prefix, or nothing (the lease expires
		// and the span is redelivered).
		k := len(ans.Messages)
		switch r := rng.IntN(10); {
		case r == 0:
			k = 0
		case r <= 2:
			k = rng.IntN(k + 1)
		}
		if k == 0 {
			continue
		}
		items := make([]ackItem, k)
		for i, m := range ans.Messages[:k] {
			items[i] = ackItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: ans.LeaseID, Status: "completed"}
		}
		st, res, err := w.api.ackBatch(ctx, workGroup, items)
		if err != nil || st != http.StatusOK {
			if err == nil && st < 500 {
				w.led.violate("ack answered %d", st)
			}
			continue
		}
		var ok []string
		for _, r := range res {
			if r.Success && (r.Error == nil || *r.Error == "") && r.Index >= 0 && r.Index < k {
				ok = append(ok, items[r.Index].TransactionID)
			}
		}
		w.led.ackSucceeded(ok)
	}
}

// resend re-sends every push whose answer was lost, with the same transactionIds,
// until each is answered 201 (dedup must turn already-stored items into duplicates).
func resend(ctx context.Context, a *api, led *ledger) (int, error) {
	pend := led.takePending()
	for _, p := range pend {
		id := led.sent(p.items)
		for {
			st, res, err := a.push(ctx, p.items)
			if err == nil && st == http.StatusCreated {
				led.answered(id, p.items, res)
				break
			}
			if ctx.Err() != nil {
				return 0, fmt.Errorf("re-sending a lost push: %w (last status %d, %v)", ctx.Err(), st, err)
			}
			if err == nil && st < 500 {
				return 0, fmt.Errorf("re-sending a lost push: answered %d", st)
			}
			backoff(ctx, 20*time.Millisecond)
		}
	}
	return len(pend), nil
}

// drain reads the queue with a fresh group (autoAck), from the beginning when since
// is zero, else from a subscriptionFrom timestamp, and returns every message in
// delivery order.
func drain(ctx context.Context, a *api, group string, since time.Time) ([]popMessage, error) {
	return drainQueue(ctx, a, crashQueue, group, since)
}

// drainQueue is drain for any queue.
func drainQueue(ctx context.Context, a *api, queue, group string, since time.Time) ([]popMessage, error) {
	var all []popMessage
	q := url.Values{}
	q.Set("batch", "5000")
	q.Set("partitions", "1000")
	q.Set("consumerGroup", group)
	q.Set("autoAck", "true")
	q.Set("subscriptionMode", "all")
	if !since.IsZero() {
		q.Set("subscriptionFrom", since.UTC().Format("2006-01-02T15:04:05.000000Z"))
	}
	for {
		st, ans, err := a.pop(ctx, queue, q)
		if err != nil {
			return all, err
		}
		if st == http.StatusNoContent {
			return all, nil
		}
		if st != http.StatusOK {
			return all, fmt.Errorf("drain pop answered %d", st)
		}
		if len(ans.Messages) == 0 {
			return all, errors.New("drain pop answered 200 with no messages")
		}
		all = append(all, ans.Messages...)
	}
}

func backoff(ctx context.Context, d time.Duration) {
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
