package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestTransactionFlattensPushItemsAndEncodesResults(t *testing.T) {
	// spec 5.1: each push item is one operation, in order; 5.3: push and ack results differ;
	// 11 #42: a duplicate push says so.
	fake := newFake()
	fake.onTx = func(ops []broker.TxOp) (broker.TxResult, error) {
		return broker.TxResult{TransactionID: "tx-9", Success: true, Results: []broker.TxOpResult{
			{Index: 0, Type: "push", Success: true, TransactionID: "a", MessageID: "m0", PartitionID: "p0", QueueName: "next"},
			{Index: 1, Type: "push", Success: true, TransactionID: "b", MessageID: "m1", PartitionID: "p0", QueueName: "next", Duplicate: true},
			{Index: 2, Type: "ack", Success: true, TransactionID: "order-1"},
		}}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/transaction", `{"requiredLeases":["L"],"operations":[
	 {"type":"push","items":[{"queue":"next","payload":{"x":1},"transactionId":"a"},{"queue":"next","partition":"p","payload":[2]}]},
	 {"type":"ack","transactionId":"order-1","partitionId":"pid","status":"completed","consumerGroup":"g","leaseId":"L"}]}`)
	requireJSON(t, r, 200, `{"transactionId":"tx-9","success":true,"results":[
	 {"index":0,"type":"push","success":true,"transactionId":"a","messageId":"m0","partitionId":"p0","queueName":"next"},
	 {"index":1,"type":"push","success":true,"transactionId":"b","messageId":"m1","partitionId":"p0","queueName":"next","status":"duplicate","duplicate":true},
	 {"index":2,"type":"ack","success":true,"transactionId":"order-1","error":null,"dlq":false}]}`)
	require.Equal(t, []broker.TxOp{
		{Type: "push", Push: broker.PushItem{Queue: "next", Payload: []byte(`{"x":1}`), TransactionID: "a"}},
		{Type: "push", Push: broker.PushItem{Queue: "next", Partition: "p", Payload: []byte(`[2]`)}},
		{Type: "ack", Group: "g", Ack: broker.AckItem{TransactionID: "order-1", PartitionID: "pid", LeaseID: "L", Status: "completed"}},
	}, fake.txOps)
}

func TestTransactionFailureIsStill200WithTheError(t *testing.T) {
	fake := newFake()
	fake.onTx = func(ops []broker.TxOp) (broker.TxResult, error) {
		return broker.TxResult{TransactionID: "tx-1", Success: false, Error: "Operation 0 (ack) failed: Invalid or expired lease", Results: []broker.TxOpResult{
			{Index: 0, Type: "ack", Success: false, TransactionID: "o", Error: "Invalid or expired lease"}}}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"o","partitionId":"p"}]}`)
	requireJSON(t, r, 200, `{"transactionId":"tx-1","success":false,"error":"Operation 0 (ack) failed: Invalid or expired lease","results":[
	 {"index":0,"type":"ack","success":false,"transactionId":"o","error":"Invalid or expired lease","dlq":false}]}`)
}

func TestTransactionBadInput(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"empty body", ``, "Empty request body"},
		{"invalid JSON", `{"operations":[`, "Invalid JSON: "},
		{"operations missing (spec 5.1)", `{}`, "operations array required"},
		{"operations not an array", `{"operations":"x"}`, "operations array required"},
		{"operations empty", `{"operations":[]}`, "operations array cannot be empty"},
		{"unknown type", `{"operations":[{"type":"delete"}]}`, "Unknown operation type: delete"},
		{"push without items", `{"operations":[{"type":"push"}]}`, "items array is required"},
		{"only pushes of no items", `{"operations":[{"type":"push","items":[]}]}`, "operations array cannot be empty"},
		{"push item queue not a string", `{"operations":[{"type":"push","items":[{"queue":1}]}]}`, "Queue must be a string"},
		{"push item bad traceId", `{"operations":[{"type":"push","items":[{"queue":"q","traceId":"x"}]}]}`, "TraceId must be a UUID"},
		{"ack without transactionId", `{"operations":[{"type":"ack","partitionId":"p"}]}`, "transactionId is required"},
		{"ack without partitionId", `{"operations":[{"type":"ack","transactionId":"t"}]}`, "partitionId is required to ensure message uniqueness"},
		{"ack transactionId not a string", `{"operations":[{"type":"ack","transactionId":1,"partitionId":"p"}]}`, "transactionId is required"},
		{"ack group with NUL", `{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","consumerGroup":"\u0000"}]}`, "Consumer group name must not contain NUL"},
		{"push queue not valid UTF-8", "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"a\xffb\"}]}]}", "Queue name must be valid UTF-8"},
		{"push partition with a lone surrogate", `{"operations":[{"type":"push","items":[{"queue":"q","partition":"\udc00"}]}]}`, "Partition name must be valid UTF-8"},
		{"ack group with a lone surrogate", `{"operations":[{"type":"ack","transactionId":"t","partitionId":"p","consumerGroup":"g\ud800"}]}`, "Consumer group name must be valid UTF-8"},
		{"push payload not valid UTF-8 (issue 10)", "{\"operations\":[{\"type\":\"ack\",\"transactionId\":\"t\",\"partitionId\":\"p\"},{\"type\":\"push\",\"items\":[{\"queue\":\"q\"},{\"queue\":\"q\",\"payload\":\"\xff\"}]}]}",
			"Invalid payload at operations[1].items[1]: not valid UTF-8 (byte 1 of the payload)"},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/transaction", c.body)
			require.Equal(t, 400, r.status, "%s", r.body)
			msg := r.json(t).(map[string]any)["error"].(string)
			if c.want == "Invalid JSON: " {
				require.Contains(t, msg, c.want)
			} else {
				require.Equal(t, c.want, msg)
			}
		})
	}
	require.NotContains(t, fake.callList(), "Transaction")
}
