package powertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// verify checks, after a reopen, everything the broker promised before the
// cuts so far: the pushes (a drain by a fresh group, from since or, when
// since is zero, from the start), the work group's cursors, the DLQ. A
// redelivery of an acked message is caught by the work group's next pops
// (ledger.delivered), the first of which are made here.
func verify(t *testing.T, b *broker.Broker, led *ledger, seed uint64, run int, since time.Time, cursors map[string]int64, fig *figures) {
	t.Helper()
	at := fmt.Sprintf("seed %d after cut %d", seed, run)

	// The work group first: a pop now must not deliver anything acked.
	popClock := led.clock.Load()
	res, err := b.Pop(context.Background(), broker.PopRequest{Queue: queueName, Group: workGroup, Batch: 10000, Partitions: 1000, LeaseSeconds: 1, SubscriptionMode: "all"})
	if err == nil {
		led.delivered(run, popClock, append([]broker.Message(nil), res.Messages...))
	}
	res.Release()

	for _, g := range report.New(b.View()).GroupDetail(workGroup) {
		if g.OffsetLag < 0 {
			led.violate(vNegativeLag, "%s: partition %s cursor %d, lag %d", at, g.Partition, g.TotalConsumed, g.OffsetLag)
		}
		if prev, ok := cursors[g.PartitionID]; ok && g.TotalConsumed < prev {
			led.violate(vCursorBack, "%s: partition %s (%s) cursor %d, the last reopen found %d", at, g.Partition, g.PartitionID, g.TotalConsumed, prev)
		}
		cursors[g.PartitionID] = max(cursors[g.PartitionID], g.TotalConsumed)
	}

	group := fmt.Sprintf("verify-%d", run)
	req := broker.PopRequest{Queue: queueName, Group: group, Batch: 10000, Partitions: 1000, AutoAck: true, SubscriptionMode: "all"}
	if !since.IsZero() {
		req.SubscriptionFrom = since.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	seen := map[string]int{}
	for {
		res, err := b.Pop(context.Background(), req)
		if err != nil {
			led.violate(vOpen, "%s: drain pop: %v", at, err)
			return
		}
		if len(res.Messages) == 0 {
			res.Release()
			break
		}
		led.mu.Lock()
		for _, m := range res.Messages {
			fig.drained++
			if seen[m.TransactionID]++; seen[m.TransactionID] == 2 && led.onceLocked("twice "+m.TransactionID) {
				led.violateLocked(vTwice, "%s: %s (%s) in partition %s at offset %d again", at, m.TransactionID, m.ID, m.Partition, m.Offset)
			}
			if _, ok := led.payload[m.TransactionID]; !ok {
				led.violateLocked(vUnknown, "%s: %s (%s) in partition %s", at, m.TransactionID, m.ID, m.Partition)
			} else if string(m.Payload) != led.payload[m.TransactionID] {
				led.violateLocked(vWrongID, "%s: %s payload %q, pushed %q", at, m.TransactionID, m.Payload, led.payload[m.TransactionID])
			}
			if s, ok := led.promised[m.TransactionID]; ok && (s.messageID != m.ID || s.partition != m.Partition) {
				led.violateLocked(vWrongID, "%s: %s is %s in %s, its push answer said %s in %s", at, m.TransactionID, m.ID, m.Partition, s.messageID, s.partition)
			}
		}
		led.mu.Unlock()
		res.Release()
	}
	fig.drains++
	led.mu.Lock()
	for tx, s := range led.promised {
		if !since.IsZero() && led.sentRun[tx] < run-1 {
			continue // stored before the last run: the full drains check it
		}
		fig.checked++
		if seen[tx] == 0 && led.onceLocked("missing "+tx) { // once, however many drains miss it
			kind := vMissing
			if s.duplicate && !s.queued {
				kind = vMissingDupOnly
			}
			led.violateLocked(kind, "%s: %s (%s, partition %s, first answered in run %d, queued answer %v, duplicate answer %v)", at, tx, s.messageID, s.partition, s.epoch, s.queued, s.duplicate)
		}
	}
	dlq := make([]string, 0, len(led.dlq))
	for tx := range led.dlq {
		dlq = append(dlq, tx)
	}
	led.mu.Unlock()
	if _, err := b.DeleteGroup(group, queueName, true); err != nil {
		t.Logf("%s: deleting %s: %v", at, group, err)
	}

	entries, _, err := report.New(b.View()).DLQ(report.DLQFilter{Queue: queueName, Group: workGroup, Limit: 1 << 30})
	if err != nil {
		led.violate(vOpen, "%s: DLQ: %v", at, err)
		return
	}
	inDLQ := map[string]int{}
	for _, e := range entries {
		if inDLQ[e.TransactionID]++; inDLQ[e.TransactionID] == 2 && led.once("dlq2 "+e.TransactionID) {
			led.violate(vDLQTwice, "%s: %s (%s), failed at %d and earlier", at, e.TransactionID, e.ID, e.FailedAtMicros)
		}
	}
	for _, tx := range dlq {
		if inDLQ[tx] == 0 && led.once("dlq0 "+tx) {
			led.violate(vDLQMissing, "%s: %s", at, tx)
		}
	}
}
