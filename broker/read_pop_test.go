package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seed 000 "Consumer groups": two groups read the same messages independently;
// queue mode is competing consumers sharing one cursor set.
func TestSeedQueueModeVersusGroups(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b")
	g1 := e.pop(PopRequest{Queue: "q", Group: "g1", AutoAck: true})
	g2 := e.pop(PopRequest{Queue: "q", Group: "g2", AutoAck: true})
	assert.Equal(t, []string{"a", "b"}, txids(g1))
	assert.Equal(t, []string{"a", "b"}, txids(g2))
	qm1 := e.pop(PopRequest{Queue: "q", Batch: 1, AutoAck: true})
	qm2 := e.pop(PopRequest{Queue: "q", Batch: 1, AutoAck: true})
	assert.Equal(t, []string{"a"}, txids(qm1))
	assert.Equal(t, []string{"b"}, txids(qm2), "queue-mode consumers share one cursor")
	assert.Equal(t, QueueModeGroup, qm1.Group)
}

// seed 000: "A pop with no consumerGroup that also carries subscriptionMode=new
// does not skip the backlog".
func TestSeedNewIgnoredInQueueMode(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b")
	res := e.pop(PopRequest{Queue: "q", SubscriptionMode: "new", SubscriptionFrom: "now", AutoAck: true})
	assert.Equal(t, []string{"a", "b"}, txids(res))
}

// seed 000 "Subscription modes are decided once": sending subscriptionMode on
// later pops has no effect, also when the first contact found nothing.
func TestSeedSubscriptionDecidedOnce(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "old")
	first := e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"})
	assert.Empty(t, first.Messages, "new skips the backlog")
	e.push("q", "", "fresh")
	later := e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "all", AutoAck: true})
	assert.Equal(t, []string{"fresh"}, txids(later), "the stored `new` record wins over a later `all`")

	all := e.pop(PopRequest{Queue: "q", Group: "h", AutoAck: true})
	assert.Equal(t, []string{"old", "fresh"}, txids(all))
	e.reopen()
	e.push("q", "", "third")
	again := e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "all", AutoAck: true})
	assert.Equal(t, []string{"third"}, txids(again), "the record survives a restart")
}

// seed 000: "a new group receives everything ever pushed to that new partition".
func TestSeedLaterPartitionsInheritNewSubscription(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "old")
	e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"})
	e.push("q", "p2", "x", "y")
	res := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 5, AutoAck: true})
	assert.Equal(t, []string{"x", "y"}, txids(res))
}

// seed 000: "The targeted single-partition pop does not register a
// subscription. It seeds only the partition it names."
func TestSeedTargetedPopSeedsOnlyItsPartition(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a1")
	e.push("q", "p2", "b1")
	res := e.pop(PopRequest{Queue: "q", Partition: "p1", Group: "g", SubscriptionMode: "new"})
	assert.Empty(t, res.Messages, "p1 seeded at its end from this request's intent")
	_, ok := e.b.cur.Subscription("q", "g")
	assert.False(t, ok, "no queue-wide subscription record")
	// The first wildcard pop is the first contact: default `all` decides p2.
	res = e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 5, AutoAck: true})
	assert.Equal(t, []string{"b1"}, txids(res), "p1 keeps the targeted pop's seed, p2 reads its backlog")
}

// seed 000 "One leased batch per (partition, group)": a second consumer of the
// same group is skipped without blocking; other groups are not affected.
func TestSeedOneLeasedBatchPerPartitionAndGroup(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a")
	e.push("q", "p2", "b")
	w1 := e.pop(PopRequest{Queue: "q", Group: "g"})
	w2 := e.pop(PopRequest{Queue: "q", Group: "g"})
	w3 := e.pop(PopRequest{Queue: "q", Group: "g"})
	assert.Equal(t, []string{"a"}, txids(w1), "oldest ready partition first")
	assert.Equal(t, []string{"b"}, txids(w2), "the leased partition is skipped, the next one claimed")
	assert.Empty(t, w3.Messages, "everything leased: nothing, at once")
	other := e.pop(PopRequest{Queue: "q", Group: "analytics", Partitions: 2})
	assert.Equal(t, []string{"a", "b"}, txids(other), "a different group reads the same lanes")
	assert.NotEqual(t, w1.LeaseID, w2.LeaseID)
}

// seed 000: expiry redelivers the same span; it counts as an attempt but does
// not consume the retry budget.
func TestSeedExpiryRedeliveryKeepsRetryBudget(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b")
	first := e.pop(PopRequest{Queue: "q", Group: "g", LeaseSeconds: 5})
	require.Equal(t, []string{"a", "b"}, txids(first))
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages)
	e.clk.Advance(6 * time.Second)
	again := e.pop(PopRequest{Queue: "q", Group: "g", LeaseSeconds: 5})
	assert.Equal(t, []string{"a", "b"}, txids(again), "the expired span is redelivered from the cursor")
	assert.Equal(t, int64(0), again.Messages[0].RetryCount, "expiry does not charge the retry budget")
	st, _ := e.b.cur.Get(cursorKey(e, "q", "Default", "g"))
	assert.Equal(t, uint32(2), st.Lease.Attempts)
	stale := e.ack("g", first, "completed")
	assert.Equal(t, "Invalid or expired lease", stale[0].Error)
	ok := e.ack("g", again, "completed")
	assert.True(t, ok[1].Success)
	assert.True(t, ok[1].LeaseReleased)
}

// seed 000 / spec 6: extend renews every live lease of the id and never
// revives an expired one.
func TestSeedExtendLease(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a")
	e.push("q", "p2", "b")
	res := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 2, LeaseSeconds: 10})
	require.Equal(t, 2, res.PartitionsClaimed)
	e.clk.Advance(8 * time.Second)
	ext := e.b.ExtendLease(res.LeaseID, 120)
	assert.Equal(t, 2, ext.Renewed)
	assert.Equal(t, e.clk.Now().Add(120*time.Second).UnixMicro(), ext.NewExpiresAtMicros)
	e.clk.Advance(100 * time.Second)
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 2}).Messages, "still leased after the original expiry")
	e.clk.Advance(30 * time.Second)
	dead := e.b.ExtendLease(res.LeaseID, 60)
	assert.Equal(t, ExtendResult{Error: "Lease already expired"}, dead)
	assert.Equal(t, ExtendResult{Error: "Lease not found"}, e.b.ExtendLease(uuidString(newV7()), 60))
}

// seed 000 "autoAck": the cursor moves in the pop; at-most-once, no lease.
func TestSeedAutoAckAtMostOnce(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a")
	res := e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})
	assert.Equal(t, "", res.LeaseID)
	assert.Equal(t, []string{"a"}, txids(res))
	e.reopen()
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages, "never redelivered, also after a restart")
	late := e.ack("g", res, "completed")
	assert.True(t, late[0].Success, "acking an auto-acked message is harmless")
	assert.True(t, late[0].AlreadyCommitted)
}

// seed 000: "Always ack using the partitionId on the individual message."
func TestSeedMultiPartitionPopAckedPerMessagePartition(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "same")
	e.push("q", "p2", "same")
	res := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 2})
	require.Len(t, res.Messages, 2)
	assert.NotEqual(t, res.Messages[0].PartitionID, res.Messages[1].PartitionID)
	assert.Equal(t, res.Messages[0].PartitionID, res.PartitionID, "the envelope names the first claimed partition")
	acks := e.ack("g", res, "completed")
	assert.True(t, acks[0].Success && acks[1].Success)
	assert.Equal(t, "p1", acks[0].PartitionName)
	assert.Equal(t, "p2", acks[1].PartitionName)
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 2}).Messages)
}

// seed 000: "you land on the first segment at or after your timestamp".
func TestSeedTimestampReplayLandsOnSegmentBoundary(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a1", "a2")
	mid := e.clk.Now()
	e.push("q", "", "b1", "b2")
	e.push("q", "", "c1")
	from := mid.Add(-500 * time.Microsecond).Format(time.RFC3339Nano)
	res := e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionFrom: from, AutoAck: true})
	assert.Equal(t, []string{"b1", "b2", "c1"}, txids(res))
}

func TestPopDelayedProcessingAndWindowBuffer(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.DelayedProcessing = 10
	_, err := e.b.Configure(ConfigureRequest{Queue: "d", Options: opts})
	require.NoError(t, err)
	e.push("d", "", "a")
	assert.Empty(t, e.pop(PopRequest{Queue: "d", AutoAck: true}).Messages, "spec 3.9: invisible until 10 s old")
	e.clk.Advance(10 * time.Second)
	assert.Equal(t, []string{"a"}, txids(e.pop(PopRequest{Queue: "d", AutoAck: true})))

	opts = DefaultQueueOptions()
	opts.WindowBuffer = 2
	_, err = e.b.Configure(ConfigureRequest{Queue: "w", Options: opts})
	require.NoError(t, err)
	e.push("w", "", "x", "y", "z")
	assert.Empty(t, e.pop(PopRequest{Queue: "w", AutoAck: true}).Messages, "spec 3.9: held while the newest message is younger than the window")
	e.clk.Advance(2 * time.Second)
	assert.Len(t, e.pop(PopRequest{Queue: "w", AutoAck: true}).Messages, 3)
}

func TestPopDiscovery(t *testing.T) {
	e := newEnv(t)
	e.push("billing.invoices", "", "i1")
	e.push("billing.refunds", "", "r1")
	e.push("shipping.labels", "", "s1")
	_, err := e.b.Pop(context.Background(), PopRequest{Batch: 10})
	assert.ErrorIs(t, err, ErrBadRequest)
	res := e.pop(PopRequest{Namespace: "billing", Group: "g", Partitions: 5, AutoAck: true})
	assert.Equal(t, []string{"i1", "r1"}, txids(res))
	assert.Equal(t, "", res.Queue, "spec 3.1: top-level queue is empty")
	assert.Equal(t, "billing.invoices", res.Messages[0].Queue)
	res = e.pop(PopRequest{Task: "labels", AutoAck: true})
	assert.Equal(t, []string{"s1"}, txids(res))
}

func TestPopBadSubscriptionFrom(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "g", SubscriptionFrom: "yesterday-ish"})
	assert.ErrorIs(t, err, ErrBadRequest)
	assert.Equal(t, "invalid subscriptionFrom", err.Error())
}

func TestLongPollWakesOnPushAndTimesOut(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	res := e.pop(PopRequest{Queue: "lp", Wait: true, Timeout: 300 * time.Millisecond})
	assert.Empty(t, res.Messages)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "answers no earlier than its timeout")

	done := make(chan PopResult, 1)
	go func() {
		r, _ := e.b.Pop(context.Background(), PopRequest{Queue: "lp", Batch: 10, Wait: true, Timeout: 10 * time.Second, AutoAck: true})
		done <- r
	}()
	require.Eventually(t, func() bool { return e.b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	e.push("lp", "", "wake")
	select {
	case r := <-done:
		assert.Equal(t, []string{"wake"}, txids(r))
		r.Release()
	case <-time.After(5 * time.Second):
		t.Fatal("parked pop not woken by a push")
	}
}

func TestLongPollParkedPopKeepsItsGateArmed(t *testing.T) {
	// A push signals only gates with waiters: a parked pop must count as one
	// for as long as it is parked, or pushes pass it by and it wakes only on
	// its 100 ms backoff re-check.
	e := newEnv(t)
	e.push("armed", "", "first")
	r := e.pop(PopRequest{Queue: "armed", AutoAck: true})
	require.Len(t, r.Messages, 1)
	r.Release()
	q := e.b.lookupQueue("armed")
	require.NotNil(t, q)
	done := make(chan PopResult, 1)
	go func() {
		r, _ := e.b.Pop(context.Background(), PopRequest{Queue: "armed", Wait: true, Timeout: 10 * time.Second, AutoAck: true})
		done <- r
	}()
	require.Eventually(t, func() bool { return e.b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int32(1), q.gate.Waiters(), "the parked pop is counted on its queue's gate")
	e.push("armed", "", "second")
	r = <-done
	assert.Equal(t, []string{"second"}, txids(r))
	r.Release()
	assert.Equal(t, int32(0), q.gate.Waiters(), "an answered pop leaves the gate")
}

func TestLongPollEndsOnCancelAndClose(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() {
		_, err := e.b.Pop(ctx, PopRequest{Queue: "lp", Wait: true, Timeout: time.Minute})
		done <- err
	}()
	go func() {
		_, err := e.b.Pop(context.Background(), PopRequest{Queue: "lp2", Wait: true, Timeout: time.Minute})
		done <- err
	}()
	require.Eventually(t, func() bool { return e.b.View().Counters().ParkedPops == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, e.b.Close())
	require.NoError(t, <-done, "Close answers parked pops with no messages")
	e.b = nil
}

func TestMinPopWaitTimeWaitsForAFullerBatch(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.MinPopWaitTime = 5000
	_, err := e.b.Configure(ConfigureRequest{Queue: "m", Options: opts})
	require.NoError(t, err)
	e.push("m", "", "a")
	done := make(chan PopResult, 1)
	go func() {
		r, _ := e.b.Pop(context.Background(), PopRequest{Queue: "m", Batch: 3, Wait: true, Timeout: 10 * time.Second, AutoAck: true})
		done <- r
	}()
	require.Eventually(t, func() bool { return e.b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	e.push("m", "", "b")
	r := <-done
	defer r.Release()
	assert.Equal(t, []string{"a", "b"}, txids(r), "seed 000: an under-full blocking pop waits for more")
}

// seed 000: a pop re-checks the cursor and lease under the partition lock, so
// a partition whose span was fully acked is a candidate for the very next push,
// not only after the released lease's old expiry (regression: it stayed
// deferred until then, so long-polls and pops answered 204 for leaseTime).
func TestAckedPartitionIsReadyForTheNextPush(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait bool
	}{{"plain pop", false}, {"long-poll", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.push("q", "p1", "a")
			first := e.pop(PopRequest{Queue: "q", Group: "g"})
			require.Equal(t, []string{"a"}, txids(first))
			acks := e.ack("g", first, "completed")
			require.True(t, acks[0].LeaseReleased)
			e.push("q", "p1", "b")
			next := e.pop(PopRequest{Queue: "q", Group: "g", Wait: tc.wait, Timeout: 5 * time.Second})
			assert.Equal(t, []string{"b"}, txids(next))
		})
	}
}

// The same through a transaction's ack: the release re-arms the partition.
func TestTransactionAckedPartitionIsReadyForTheNextPush(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a")
	first := e.pop(PopRequest{Queue: "q", Group: "g"})
	require.Equal(t, []string{"a"}, txids(first))
	m := first.Messages[0]
	res, err := e.b.Transaction([]TxOp{{Type: "ack", Group: "g", Ack: AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: first.LeaseID}}})
	require.NoError(t, err)
	require.True(t, res.Success, res.Error)
	e.push("q", "p1", "b")
	next := e.pop(PopRequest{Queue: "q", Group: "g"})
	assert.Equal(t, []string{"b"}, txids(next))
}
