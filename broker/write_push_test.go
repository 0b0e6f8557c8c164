package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushQueuesAndDedups(t *testing.T) {
	e := newEnv(t)
	res := e.push("billing.invoices", "", "a", "b", "a")
	require.Len(t, res, 3)
	assert.Equal(t, PushQueued, res[0].Status)
	assert.Equal(t, PushQueued, res[1].Status)
	assert.Equal(t, PushDuplicate, res[2].Status, "spec 1.4: a later duplicate in one request")
	assert.Equal(t, res[0].MessageID, res[2].MessageID, "spec 1.4: reports the first occurrence's id")
	assert.Equal(t, DefaultPartition, res[0].Partition)
	assert.Less(t, res[0].MessageID, res[1].MessageID, "ids are time-ordered in item order")

	again := e.push("billing.invoices", "Default", "b")
	assert.Equal(t, PushDuplicate, again[0].Status)
	assert.Equal(t, res[1].MessageID, again[0].MessageID)

	other := e.push("billing.invoices", "p2", "b")
	assert.Equal(t, PushQueued, other[0].Status, "spec 1.4: the same transactionId in another partition is not a duplicate")

	q := e.b.lookupQueue("billing.invoices")
	require.NotNil(t, q)
	c := q.conf.Load()
	assert.Equal(t, "billing", c.namespace)
	assert.Equal(t, "invoices", c.task)
	assert.Equal(t, DefaultQueueOptions(), c.opts)
}

func TestPushGeneratesTransactionIDs(t *testing.T) {
	e := newEnv(t)
	res := e.push("q", "", "", "")
	assert.NotEmpty(t, res[0].TransactionID)
	assert.NotEqual(t, res[0].TransactionID, res[1].TransactionID)
	assert.Equal(t, PushQueued, res[1].Status)
}

func TestPushSharesOneTimestamp(t *testing.T) {
	e := newEnv(t)
	e.push("q", "", "a", "b", "c")
	res := e.pop(PopRequest{Queue: "q", AutoAck: true})
	require.Len(t, res.Messages, 3)
	for _, m := range res.Messages {
		assert.Equal(t, res.Messages[0].CreatedAtMicros, m.CreatedAtMicros, "seed 000: messages of one push share createdAt")
	}
}

func TestPushRejectsBadNames(t *testing.T) {
	e := newEnv(t)
	for _, it := range []PushItem{{Queue: ""}, {Queue: "../x"}, {Queue: "q", Partition: "a\x00"}, {Queue: "q", TransactionID: string(make([]byte, 256))}} {
		_, err := e.b.Push([]PushItem{{Queue: "ok"}, it})
		assert.ErrorIs(t, err, ErrBadRequest, "%q", it.Queue)
	}
	assert.Nil(t, e.b.lookupQueue("ok"), "a rejected request stores nothing")
}

func TestPushMaxSize(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.MaxSize = 3
	_, err := e.b.Configure(ConfigureRequest{Queue: "small", Options: opts})
	require.NoError(t, err)
	e.push("small", "", "a", "b")
	res, err := e.b.Push([]PushItem{{Queue: "small", TransactionID: "c"}, {Queue: "small", TransactionID: "d"}, {Queue: "big", TransactionID: "e"}})
	require.NoError(t, err)
	assert.Equal(t, PushFailed, res[0].Status)
	assert.Equal(t, "Queue 'small' would exceed max capacity (3). Current: 2, Batch: 2", res[0].Error)
	assert.Equal(t, PushFailed, res[1].Status)
	assert.Equal(t, PushQueued, res[2].Status, "spec 1.7: items for other queues are still stored")
}

// Issue 23: the in-request duplicate set (txidBuf.seen) and the item indexes carved per group.
// 3 partitions interleaved, 200 items each, every transactionId twice in its partition and
// once in another: each repeat answers its first occurrence's id, the other partition's is
// its own message.
func TestPushRepeatsWithinARequestAcrossPartitions(t *testing.T) {
	e := newEnv(t)
	var items []PushItem
	for i := range 600 {
		part := []string{"p0", "p1", "p2"}[i%3]
		items = append(items, PushItem{Queue: "rep", Partition: part, TransactionID: fmt.Sprintf("tx-%d", (i/3)%100), Payload: []byte(`1`)})
	}
	res, err := e.b.Push(items)
	require.NoError(t, err)
	first := map[string]int{} // partition/txid → index of its first item
	queued := 0
	for i, r := range res {
		key := items[i].Partition + "/" + items[i].TransactionID
		require.Equal(t, items[i].Partition, r.Partition)
		j, seen := first[key]
		if !seen {
			first[key] = i
			require.Equal(t, PushQueued, r.Status, "item %d", i)
			queued++
			continue
		}
		require.Equal(t, PushDuplicate, r.Status, "item %d", i)
		require.Equal(t, res[j].MessageID, r.MessageID, "item %d", i)
	}
	assert.Equal(t, 300, queued)
	ids := map[string]bool{}
	for _, j := range first {
		ids[res[j].MessageID] = true
	}
	assert.Len(t, ids, 300, "every first occurrence got its own message")
}
