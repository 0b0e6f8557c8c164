package broker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigPayload is a JSON string of n bytes in all.
func bigPayload(n int, fill string) []byte {
	return []byte(`"` + strings.Repeat(fill, n-2) + `"`)
}

func payloadBytes(res PopResult) int {
	n := 0
	for _, m := range res.Messages {
		n += len(m.Payload)
	}
	return n
}

// Issue 10: one pop response has a payload budget over all the partitions it claims
// (maxPopBytes), instead of 32 MiB per partition, which let `partitions=N` over large
// messages build N × 32 MiB in memory. The read that crosses the budget keeps its message,
// then claiming stops; partitions not claimed stay ready for the next pop.
func TestPopStopsClaimingOnceTheResponseByteBudgetIsSpent(t *testing.T) {
	e := newEnv(t)
	const big = 11 << 20 // three of them cross maxPopBytes (32 MiB)
	for _, p := range []string{"p0", "p1", "p2", "p3"} {
		_, err := e.b.Push([]PushItem{
			{Queue: "q", Partition: p, TransactionID: p + "-big", Payload: bigPayload(big, "x")},
			{Queue: "q", Partition: p, TransactionID: p + "-small", Payload: []byte(`1`)},
		})
		require.NoError(t, err)
	}
	res := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 4, Batch: 10000})
	assert.Equal(t, 3, res.PartitionsClaimed, "the third partition's read crossed the budget: no fourth claim")
	assert.Equal(t, 5, len(res.Messages), "two whole partitions, then the big message that crossed the budget")
	assert.LessOrEqual(t, payloadBytes(res), maxPopBytes+big, "at most the budget plus one message")

	next := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 4, Batch: 10000})
	assert.Equal(t, 1, next.PartitionsClaimed, "the unclaimed partition is served next; the others are leased")
	assert.Equal(t, []string{next.Messages[0].Partition + "-big", next.Messages[0].Partition + "-small"}, txids(next))
}

// A message larger than the whole budget is still delivered, alone (spec 3.5: a pop returns
// what is ready; a budget must never wedge a partition).
func TestPopReturnsOneMessageLargerThanTheBudget(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.Push([]PushItem{
		{Queue: "q", Partition: "p", TransactionID: "huge", Payload: bigPayload(maxPopBytes+1024, "y")},
		{Queue: "q", Partition: "p", TransactionID: "after", Payload: []byte(`2`)},
	})
	require.NoError(t, err)
	res := e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 10})
	require.Equal(t, []string{"huge"}, txids(res))
	assert.Equal(t, maxPopBytes+1024, len(res.Messages[0].Payload))
	e.ack("g", res, "completed")
	assert.Equal(t, []string{"after"}, txids(e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 10})))
}
