package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ackWant struct {
	success, released, dlq, already bool
	err                             string
}

// spec 4.6: acks are offset commits, walked in message order, clamped at the
// first retry-like item.
func TestAckClampingTable(t *testing.T) {
	notApplied := "Not applied: an earlier message in this partition was released for retry"
	cases := []struct {
		name      string
		statuses  []string // per message a..d (in message order); "" = not acked
		want      []ackWant
		redeliver []string // what the next pop of the group returns
	}{
		{"completed on the last message commits the whole span (step 2)",
			[]string{"", "", "", "completed"}, []ackWant{{success: true, released: true}}, nil},
		{"completed in the middle commits up to it, lease kept",
			[]string{"", "completed", "", ""}, []ackWant{{success: true}}, nil},
		{"retry stops the walk; later terminal items are not applied (step 3)",
			[]string{"completed", "retry", "completed", ""},
			[]ackWant{{success: true}, {success: true, released: true}, {err: notApplied}}, []string{"b", "c", "d"}},
		{"failed with budget left releases once; later failed is satisfied",
			[]string{"failed", "", "failed", ""},
			[]ackWant{{success: true, released: true}, {success: true, released: true}}, []string{"a", "b", "c", "d"}},
		{"dlq is terminal and commits past its message",
			[]string{"dlq", "", "", "completed"},
			[]ackWant{{success: true, dlq: true}, {success: true, released: true}}, nil},
		{"unknown status changes nothing",
			[]string{"bogus", "", "", ""}, []ackWant{{err: "Invalid status: bogus"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.push("q", "", "a", "b", "c", "d")
			res := e.pop(PopRequest{Queue: "q", Group: "g"})
			require.Len(t, res.Messages, 4)
			var items []AckItem
			for i, s := range c.statuses {
				if s == "" {
					continue
				}
				m := res.Messages[i]
				items = append(items, AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: s})
			}
			// Reverse the request order: acks are applied in message order.
			for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
				items[i], items[j] = items[j], items[i]
			}
			out, err := e.b.Ack("g", items)
			require.NoError(t, err)
			for i := range out {
				w := c.want[len(out)-1-i]
				got := ackWant{out[i].Success, out[i].LeaseReleased, out[i].DLQ, out[i].AlreadyCommitted, out[i].Error}
				assert.Equal(t, w, got, "item %s", out[i].TransactionID)
				assert.Equal(t, i, out[i].Index, "results in input order")
			}
			if c.redeliver != nil {
				again := e.pop(PopRequest{Queue: "q", Group: "g"})
				assert.Equal(t, c.redeliver, txids(again))
			}
		})
	}
}

func TestAckEdgeCases(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b")
	res := e.pop(PopRequest{Queue: "q", Group: "g"})
	pid := res.Messages[0].PartitionID
	out, err := e.b.Ack("g", []AckItem{
		{TransactionID: "nope", PartitionID: pid},
		{TransactionID: "a", PartitionID: uuidString(newV7())},
		{TransactionID: "a", PartitionID: pid, LeaseID: uuidString(newV7())},
		{TransactionID: "a", PartitionID: pid},
	})
	require.NoError(t, err)
	assert.Equal(t, "Message not found", out[0].Error)
	assert.Equal(t, "Message not found", out[1].Error)
	assert.Equal(t, "Invalid or expired lease", out[2].Error)
	assert.True(t, out[3].Success, "spec 4.6 step 1: an ack without leaseId skips the lease check")
	again, err := e.b.Ack("g", []AckItem{{TransactionID: "a", PartitionID: pid}})
	require.NoError(t, err)
	assert.Equal(t, ackWant{success: true, already: true}, ackWant{again[0].Success, again[0].LeaseReleased, again[0].DLQ, again[0].AlreadyCommitted, again[0].Error},
		"spec 4.6 step 4: below the cursor is reported, not moved")
	empty, err := e.b.Ack("g", nil)
	require.NoError(t, err)
	assert.Empty(t, empty)
}

// spec 4.5: retryLimit N delivers a failing span N+1 times, then DLQs it.
func TestAckDLQAfterRetryLimit(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.RetryLimit = 1
	_, err := e.b.Configure(ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "", "a")
	r1 := e.pop(PopRequest{Queue: "q", Group: "g"})
	out := e.ack("g", r1, "failed")
	assert.True(t, out[0].LeaseReleased)
	assert.False(t, out[0].DLQ)
	r2 := e.pop(PopRequest{Queue: "q", Group: "g"})
	require.Equal(t, []string{"a"}, txids(r2))
	assert.Equal(t, int64(1), r2.Messages[0].RetryCount)
	items := []AckItem{{TransactionID: "a", PartitionID: r2.PartitionID, LeaseID: r2.LeaseID, Status: "failed", Error: "boom"}}
	out, err = e.b.Ack("g", items)
	require.NoError(t, err)
	assert.True(t, out[0].DLQ, "the budget is spent: DLQ")
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages, "the cursor moved past it")
	assert.Len(t, e.pop(PopRequest{Queue: "q", Group: "other", AutoAck: true}).Messages, 1, "other groups still read it")

	e.reopen()
	entries, total, err := listDLQ(e.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	d := entries[0]
	assert.Equal(t, "a", d.TransactionID)
	assert.Equal(t, "boom", d.ErrorMessage)
	assert.Equal(t, "g", d.Group)
	assert.Equal(t, "Default", d.Partition)
	assert.Equal(t, int64(1), d.RetryCount)
	assert.Equal(t, `{"tx":"a"}`, string(d.Payload))
	assert.Equal(t, r2.Messages[0].ID, d.ID)
	_, total, err = listDLQ(e.b, dlqFilter{Group: "nobody"})
	require.NoError(t, err)
	assert.Zero(t, total)
}

func TestAckBatchResolvesMessagesOutsideTheLeasedSpan(t *testing.T) {
	// A batch naming messages the lease does not cover (here: a single-lease pop of 2, then acks
	// of the other 3 plus unknown ids) is resolved through one dedup lookup: known ids find
	// their messages, unknown ones are "Message not found".
	e := newEnv(t)
	e.push("span", "", "a", "b", "c", "d", "e")
	res := e.pop(PopRequest{Queue: "span", Group: "g", Batch: 2})
	require.Len(t, res.Messages, 2)
	pid := res.Messages[0].PartitionID
	items := []AckItem{
		{TransactionID: "a", PartitionID: pid, LeaseID: res.LeaseID},
		{TransactionID: "ghost-1", PartitionID: pid, LeaseID: res.LeaseID},
		{TransactionID: "e", PartitionID: pid, LeaseID: res.LeaseID},
		{TransactionID: "c", PartitionID: pid, LeaseID: res.LeaseID},
		{TransactionID: "ghost-2", PartitionID: pid, LeaseID: res.LeaseID},
	}
	out, err := e.b.Ack("g", items)
	require.NoError(t, err)
	require.Len(t, out, 5)
	for i, want := range []bool{false, true, false, false, true} {
		assert.Equal(t, want, out[i].Error == "Message not found", "item %d (%s): %q", i, items[i].TransactionID, out[i].Error)
	}
	assert.True(t, out[0].Success, "a is in the leased span")
	res.Release()
}

func TestAckBatchInterleavingPartitionsAndLeases(t *testing.T) {
	// Items alternate between two partitions, each with its own lease, plus an unknown
	// partition and an unparsable lease id in between: every item is judged on its own ids.
	e := newEnv(t)
	e.push("mix", "p1", "a1", "a2")
	e.push("mix", "p2", "b1", "b2")
	r1 := e.pop(PopRequest{Queue: "mix", Partition: "p1", Group: "g", Batch: 10})
	r2 := e.pop(PopRequest{Queue: "mix", Partition: "p2", Group: "g", Batch: 10})
	require.Len(t, r1.Messages, 2)
	require.Len(t, r2.Messages, 2)
	p1, p2 := r1.Messages[0].PartitionID, r2.Messages[0].PartitionID
	items := []AckItem{
		{TransactionID: "a1", PartitionID: p1, LeaseID: r1.LeaseID},
		{TransactionID: "b1", PartitionID: p2, LeaseID: r2.LeaseID},
		{TransactionID: "a2", PartitionID: "0198e4c1-0000-7000-8000-00000000aa01", LeaseID: r1.LeaseID},
		{TransactionID: "a2", PartitionID: p1, LeaseID: "not-a-lease"},
		{TransactionID: "a2", PartitionID: p1, LeaseID: r1.LeaseID},
		{TransactionID: "b2", PartitionID: p2, LeaseID: r2.LeaseID},
	}
	out, err := e.b.Ack("g", items)
	require.NoError(t, err)
	assert.True(t, out[0].Success, "a1")
	assert.True(t, out[1].Success, "b1")
	assert.Equal(t, "Message not found", out[2].Error, "unknown partition")
	assert.False(t, out[3].Success, "an unparsable lease id is never live")
	assert.True(t, out[5].Success, "b2")
	r1.Release()
	r2.Release()
}
