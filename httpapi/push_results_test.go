package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// appendPushResultsRef is appendPushResults as it was before it reused encoded strings
// (issue 14): every string scanned and escaped at each use.
func appendPushResultsRef(b []byte, results []broker.PushResult) []byte {
	b = append(b, '[')
	for i := range results {
		r := &results[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"status":`...)
		b = appendString(b, r.Status.String())
		// A buffered item carries a transactionId only when the client sent one (spec 1.8).
		if r.Status != broker.PushBuffered || r.TransactionID != "" {
			b = append(b, `,"transaction_id":`...)
			b = appendString(b, r.TransactionID)
			b = append(b, `,"transactionId":`...)
			b = appendString(b, r.TransactionID)
		}
		switch r.Status {
		case broker.PushQueued, broker.PushDuplicate:
			b = append(b, `,"message_id":`...)
			b = appendString(b, r.MessageID)
			b = append(b, `,"messageId":`...)
			b = appendString(b, r.MessageID)
			if r.Status == broker.PushQueued {
				b = append(b, `,"partition_id":`...)
				b = appendString(b, r.PartitionID)
				b = append(b, `,"trace_id":`...)
				b = appendStringOrNull(b, r.TraceID)
			}
			b = append(b, `,"queueName":`...)
			b = appendString(b, r.Queue)
		case broker.PushFailed:
			b = append(b, `,"error":`...)
			b = appendString(b, r.Error)
		case broker.PushBuffered:
			b = append(b, `,"queue":`...)
			b = appendString(b, r.Queue)
			b = append(b, `,"partition":`...)
			b = appendString(b, r.Partition)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendPushResults writes the same bytes as the reference for every status, for queue names
// that change from item to item and come back, and for strings that need escaping.
func TestAppendPushResultsMatchesReference(t *testing.T) {
	results := []broker.PushResult{
		{Status: broker.PushQueued, TransactionID: "t1", MessageID: "m1", PartitionID: "p1", Queue: "q", TraceID: "tr"},
		{Status: broker.PushQueued, TransactionID: "t\"2", MessageID: "m2", PartitionID: "p1", Queue: "q"},
		{Status: broker.PushDuplicate, TransactionID: "t1", MessageID: "m1", Queue: "q"},
		{Status: broker.PushQueued, TransactionID: "t3", MessageID: "m3", PartitionID: "p2", Queue: "é\\x"},
		{Status: broker.PushFailed, TransactionID: "t4", Queue: "q", Error: "Queue was deleted"},
		{Status: broker.PushQueued, TransactionID: "t5", MessageID: "m5", PartitionID: "p2", Queue: "é\\x"},
		{Status: broker.PushBuffered, Queue: "q", Partition: "Default"},
		{Status: broker.PushBuffered, TransactionID: "t7", Queue: "q", Partition: "Default"},
		{Status: broker.PushDuplicate, TransactionID: "t8", MessageID: "m8", Queue: "q"},
	}
	for n := range len(results) + 1 {
		require.Equal(t, string(appendPushResultsRef(nil, results[:n])), string(appendPushResults(nil, results[:n])))
	}
}
