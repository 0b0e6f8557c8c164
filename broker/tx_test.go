package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func txPush(queue, tx string) TxOp {
	return TxOp{Type: "push", Push: PushItem{Queue: queue, TransactionID: tx, Payload: []byte(`"` + tx + `"`)}}
}

func txAck(group string, m Message, leaseID, status string) TxOp {
	return TxOp{Type: "ack", Group: group, Ack: AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: leaseID, Status: status}}
}

func TestTransactionCommitsPushAndAckTogether(t *testing.T) {
	e := newEnv(t)
	e.push("in", "", "a")
	res := e.pop(PopRequest{Queue: "in", Group: "g"})
	tx, err := e.b.Transaction([]TxOp{txAck("g", res.Messages[0], res.LeaseID, "completed"), txPush("out", "o1")})
	require.NoError(t, err)
	require.True(t, tx.Success, tx.Error)
	assert.Equal(t, "ack", tx.Results[0].Type)
	assert.True(t, tx.Results[0].Success)
	assert.Equal(t, "push", tx.Results[1].Type)
	assert.Equal(t, "out", tx.Results[1].QueueName)
	assert.NotEmpty(t, tx.Results[1].MessageID)
	assert.Empty(t, e.pop(PopRequest{Queue: "in", Group: "g"}).Messages)
	assert.Equal(t, []string{"o1"}, txids(e.pop(PopRequest{Queue: "out", AutoAck: true})))

	again, err := e.b.Transaction([]TxOp{txPush("out", "o1")})
	require.NoError(t, err)
	assert.True(t, again.Success, "spec 11 #42: a repeated push is a duplicate, not an abort")
	assert.Equal(t, tx.Results[1].MessageID, again.Results[0].MessageID)
	assert.True(t, again.Results[0].Duplicate, "spec 11 #42: the duplicate is reported")
	assert.False(t, tx.Results[1].Duplicate)

	inOne, err := e.b.Transaction([]TxOp{txPush("out", "o2"), txPush("out", "o2")})
	require.NoError(t, err)
	require.True(t, inOne.Success, inOne.Error)
	assert.False(t, inOne.Results[0].Duplicate)
	assert.True(t, inOne.Results[1].Duplicate, "a repeat inside one transaction is a duplicate too")
	assert.Equal(t, inOne.Results[0].MessageID, inOne.Results[1].MessageID)
}

// spec 5.2 all or nothing: an aborted transaction creates neither the queue
// nor the partition its push names (it used to create both before it
// validated the acks).
func TestTransactionAbortCreatesNoQueueOrPartition(t *testing.T) {
	e := newEnv(t)
	e.push("in", "", "a")
	e.push("known", "", "k")
	res := e.pop(PopRequest{Queue: "in", Group: "g"})
	m := res.Messages[0]
	m.TransactionID = "never-pushed"
	before := e.b.View().Counters()
	tx, err := e.b.Transaction([]TxOp{
		{Type: "push", Push: PushItem{Queue: "ghostq", Partition: "gp", TransactionID: "x", Payload: []byte("1")}},
		{Type: "push", Push: PushItem{Queue: "known", Partition: "newpart", TransactionID: "y", Payload: []byte("2")}},
		txAck("g", m, res.LeaseID, "completed"),
	})
	require.NoError(t, err)
	assert.False(t, tx.Success)
	assert.Equal(t, "Operation 2 (ack) failed: Message not found", tx.Error)
	assert.Nil(t, e.b.lookupQueue("ghostq"), "no queue ghostq")
	assert.Nil(t, e.b.lookupQueue("known").partition("newpart"), "no partition newpart")
	after := e.b.View().Counters()
	assert.Equal(t, before.Queues, after.Queues)
	assert.Equal(t, before.Partitions, after.Partitions)
	e.reopen()
	assert.Nil(t, e.b.lookupQueue("ghostq"), "nothing in the metadata journal either")
}

func TestTransactionAbortsApplyNothing(t *testing.T) {
	cases := []struct {
		name string
		ops  func(res PopResult) []TxOp
		err  string
	}{
		{"retry aborts (spec 5.2)", func(r PopResult) []TxOp {
			return []TxOp{txPush("out", "x"), txAck("g", r.Messages[0], r.LeaseID, "retry")}
		}, "Operation 1 (ack) failed: Invalid status: retry"},
		{"a stale lease aborts", func(r PopResult) []TxOp {
			return []TxOp{txPush("out", "x"), txAck("g", r.Messages[0], uuidString(newV7()), "completed")}
		}, "Operation 1 (ack) failed: Invalid or expired lease"},
		{"an unknown message aborts", func(r PopResult) []TxOp {
			m := r.Messages[0]
			m.TransactionID = "missing"
			return []TxOp{txPush("out", "x"), txAck("g", m, "", "completed")}
		}, "Operation 1 (ack) failed: Message not found"},
		{"an unknown partitionId aborts", func(r PopResult) []TxOp {
			m := r.Messages[0]
			m.PartitionID = uuidString(newV7())
			return []TxOp{txPush("out", "x"), txAck("g", m, "", "completed")}
		}, "Operation 1 (ack) failed: Message not found"},
		{"issue 10: a valid ack before the failing one does not hide its reason", func(r PopResult) []TxOp {
			return []TxOp{txPush("out", "x"), txAck("g", r.Messages[0], r.LeaseID, "completed"), txAck("g", r.Messages[1], uuidString(newV7()), "completed")}
		}, "Operation 2 (ack) failed: Invalid or expired lease"},
		{"issue 10: an invalid status after a valid ack is named", func(r PopResult) []TxOp {
			return []TxOp{txAck("g", r.Messages[0], r.LeaseID, "completed"), txAck("g", r.Messages[1], r.LeaseID, "maybe"), txPush("out", "x")}
		}, "Operation 1 (ack) failed: Invalid status: maybe"},
		{"an unknown operation type aborts", func(r PopResult) []TxOp {
			return []TxOp{txPush("out", "x"), {Type: "frobnicate"}}
		}, "Unknown operation type: frobnicate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.push("in", "", "a", "b")
			res := e.pop(PopRequest{Queue: "in", Group: "g", Batch: 2})
			require.Len(t, res.Messages, 2)
			ops := c.ops(res)
			tx, err := e.b.Transaction(ops)
			require.NoError(t, err)
			assert.False(t, tx.Success)
			assert.Equal(t, c.err, tx.Error)
			if last := len(tx.Results) - 1; ops[len(ops)-1].Type != "frobnicate" && assert.GreaterOrEqual(t, last, 0) {
				assert.NotEmpty(t, tx.Results[last].Error, "the failing operation's result carries its reason")
				assert.Contains(t, c.err, tx.Results[last].Error)
			}
			assert.Nil(t, e.b.lookupQueue("out"), "spec 5.2 all or nothing: the queue a push names is not created")
			assert.Empty(t, e.pop(PopRequest{Queue: "out", AutoAck: true}).Messages, "the push was not applied")
			ok := e.ack("g", res, "completed")
			assert.True(t, ok[0].Success, "the lease is still live: the ack was not applied")
			assert.False(t, ok[0].AlreadyCommitted)
		})
	}
}

func TestTransactionFailedGoesStraightToDLQ(t *testing.T) {
	e := newEnv(t)
	e.push("in", "", "a")
	res := e.pop(PopRequest{Queue: "in", Group: "g"})
	tx, err := e.b.Transaction([]TxOp{txAck("g", res.Messages[0], res.LeaseID, "failed")})
	require.NoError(t, err)
	require.True(t, tx.Success, tx.Error)
	assert.True(t, tx.Results[0].DLQ)
	entries, total, err := listDLQ(e.b, dlqFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, "Unknown error", entries[0].ErrorMessage)
	assert.Equal(t, int64(0), entries[0].RetryCount)
}

// issue 4: "acks and pushes commit together or not at all, also across a
// crash at any point". The hook stops the transaction after its commit point
// (the durable redo record) and before any state or append; reopening must
// finish it.
func TestTransactionCrashBetweenCommitPointAndAppends(t *testing.T) {
	e := newEnv(t)
	e.push("in", "", "a", "b")
	res := e.pop(PopRequest{Queue: "in", Group: "g"})
	e.b.hooks.afterTxCommitPoint = func() error { return errTxInjected }
	_, err := e.b.Transaction([]TxOp{txAck("g", res.Messages[1], res.LeaseID, "completed"), txPush("out", "o1"), txPush("out", "o2")})
	require.ErrorIs(t, err, errTxInjected)
	assert.Empty(t, e.pop(PopRequest{Queue: "out", AutoAck: true}).Messages, "nothing appended before the crash")

	e.reopen()
	assert.Equal(t, []string{"o1", "o2"}, txids(e.pop(PopRequest{Queue: "out", AutoAck: true})), "recovery re-applied the pushes")
	assert.Empty(t, e.pop(PopRequest{Queue: "in", Group: "g"}).Messages, "recovery re-applied the ack")

	e.reopen()
	assert.Empty(t, e.pop(PopRequest{Queue: "out", AutoAck: true}).Messages, "a second recovery appends nothing twice")
}
