package httpapi

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestAckSingleAnswersAnArrayOfOneResult(t *testing.T) {
	// spec 4.1, 4.4, 11 #34: Python reads result[0].success.
	fake := newFake()
	fake.onAck = func(group string, items []broker.AckItem) ([]broker.AckResult, error) {
		return []broker.AckResult{{Index: 0, TransactionID: "tx-1", Success: true, QueueName: "orders",
			PartitionName: "cust-42", LeaseReleased: true}}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/ack", `{"transactionId":"tx-1","partitionId":"pid","leaseId":"L","status":"failed",
	 "consumerGroup":"billing","error":"boom"}`)
	requireJSON(t, r, 200, `[{"index":0,"transactionId":"tx-1","success":true,"error":null,"queueName":"orders",
	 "partitionName":"cust-42","leaseReleased":true,"dlq":false}]`)
	require.Equal(t, "billing", fake.ackGroup)
	require.Equal(t, []broker.AckItem{{TransactionID: "tx-1", PartitionID: "pid", LeaseID: "L", Status: "failed", Error: "boom"}}, fake.acked)
}

func TestAckResultEncodesNullsAndTheBelowCursorFlag(t *testing.T) {
	fake := newFake()
	fake.onAck = func(group string, items []broker.AckItem) ([]broker.AckResult, error) {
		return []broker.AckResult{
			{Index: 0, TransactionID: "a", Success: false, Error: "Message not found"},
			{Index: 1, TransactionID: "b", Success: true, QueueName: "q", PartitionName: "p", AlreadyCommitted: true},
			{Index: 2, TransactionID: "c", Success: false, Error: "Not applied: an earlier message in this partition was released for retry", QueueName: "q", PartitionName: "p"},
			{Index: 3, TransactionID: "d", Success: true, QueueName: "q", PartitionName: "p", DLQ: true, LeaseReleased: true},
		}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/ack/batch", `{"acknowledgments":[
	 {"transactionId":"a","partitionId":"p1"},{"transactionId":"b","partitionId":"p1","consumerGroup":"ignored"},
	 {"transactionId":"c","partitionId":"p1","status":null,"leaseId":null,"error":null},{"transactionId":"d","partitionId":"p1","status":"dlq"}]}`)
	requireJSON(t, r, 200, `[
	 {"index":0,"transactionId":"a","success":false,"error":"Message not found","queueName":null,"partitionName":null,"leaseReleased":false,"dlq":false},
	 {"index":1,"transactionId":"b","success":true,"error":null,"queueName":"q","partitionName":"p","leaseReleased":false,"dlq":false,"alreadyCommitted":true},
	 {"index":2,"transactionId":"c","success":false,"error":"Not applied: an earlier message in this partition was released for retry","queueName":"q","partitionName":"p","leaseReleased":false,"dlq":false},
	 {"index":3,"transactionId":"d","success":true,"error":null,"queueName":"q","partitionName":"p","leaseReleased":true,"dlq":true}]`)
	require.Equal(t, "", fake.ackGroup, "per-item consumerGroup is ignored; no top-level group is queue mode (spec 4.2)")
	require.Len(t, fake.acked, 4)
	require.Equal(t, "dlq", fake.acked[3].Status)
	require.Equal(t, "", fake.acked[2].Status, "null status is the default")
}

func TestAckBatchEmptyAnswers200EmptyArray(t *testing.T) {
	// spec 4.2, 11 #33
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/ack/batch", `{"acknowledgments":[],"consumerGroup":"g"}`)
	require.Equal(t, 200, r.status)
	require.Equal(t, "[]", string(r.body))
	require.NotContains(t, fake.callList(), "Ack")
}

func TestAckBadInputUsesTheSpecMessagesVerbatim(t *testing.T) {
	long := strings.Repeat("t", 256)
	cases := []struct{ name, path, body, want string }{
		{"single: empty body", "/api/v1/ack", ``, "Empty request body"},
		{"single: invalid JSON", "/api/v1/ack", `{"transactionId":`, "Invalid JSON: "},
		{"single: transactionId missing (4.1)", "/api/v1/ack", `{"partitionId":"p"}`, "transactionId is required"},
		{"single: transactionId empty", "/api/v1/ack", `{"transactionId":"","partitionId":"p"}`, "transactionId is required"},
		{"single: transactionId not a string", "/api/v1/ack", `{"transactionId":5,"partitionId":"p"}`, "transactionId is required"},
		{"single: partitionId missing (4.1)", "/api/v1/ack", `{"transactionId":"t"}`, "partitionId is required to ensure message uniqueness"},
		{"single: body is an array", "/api/v1/ack", `[]`, "transactionId is required"},
		{"single: status not a string", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","status":1}`, "status must be a string"},
		{"single: group not a string", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","consumerGroup":1}`, "consumerGroup must be a string"},
		{"single: NUL in group", "/api/v1/ack", `{"transactionId":"t","partitionId":"p","consumerGroup":"a\u0000"}`, "Consumer group name must not contain NUL"},
		{"single: transactionId over 255 characters", "/api/v1/ack", `{"transactionId":"` + long + `","partitionId":"p"}`, "TransactionId must be at most 255 characters"},
		{"batch: empty body", "/api/v1/ack/batch", ``, "Empty request body"},
		{"batch: acknowledgments missing (4.2)", "/api/v1/ack/batch", `{}`, "acknowledgments array is required"},
		{"batch: acknowledgments not an array", "/api/v1/ack/batch", `{"acknowledgments":{}}`, "acknowledgments array is required"},
		{"batch: item without transactionId", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"a","partitionId":"p"},{"partitionId":"p"}]}`, "Each acknowledgment must have a valid transactionId string"},
		{"batch: item not an object", "/api/v1/ack/batch", `{"acknowledgments":[1]}`, "Each acknowledgment must have a valid transactionId string"},
		{"batch: item without partitionId", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"a"}]}`, "Each acknowledgment must have a valid partitionId string to ensure message uniqueness"},
		{"batch: group '..'", "/api/v1/ack/batch", `{"consumerGroup":"..","acknowledgments":[]}`, "Consumer group name must not be '.' or '..'"},
		{"batch: group not valid UTF-8", "/api/v1/ack/batch", "{\"consumerGroup\":\"a\xffb\",\"acknowledgments\":[]}", "Consumer group name must be valid UTF-8"},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("POST", c.path, c.body)
			require.Equal(t, 400, r.status, "%s", r.body)
			msg := r.json(t).(map[string]any)["error"].(string)
			if strings.HasSuffix(c.want, ": ") {
				require.True(t, strings.HasPrefix(msg, c.want), msg)
			} else {
				require.Equal(t, c.want, msg)
			}
		})
	}
	require.NotContains(t, fake.callList(), "Ack")
}

func TestAckStringsSurviveTheRequestBuffer(t *testing.T) {
	// The broker may keep ack strings (an error text on a DLQ entry): they must not alias
	// fasthttp's request buffer, which the next request on the connection overwrites.
	items, group, msg := decodeAckBatch([]byte(`{"consumerGroup":"g\u00e9","acknowledgments":[{"transactionId":"t\n1","partitionId":"p","error":"e1"}]}`))
	require.Empty(t, msg)
	require.Equal(t, "gé", group)
	require.Equal(t, []broker.AckItem{{TransactionID: "t\n1", PartitionID: "p", Error: "e1"}}, items)
	// Overwrite a body that was parsed and check the strings did not change.
	body := []byte(`{"transactionId":"abc","partitionId":"def","error":"ghi"}`)
	item, _, msg := decodeAck(body)
	require.Empty(t, msg)
	for i := range body {
		body[i] = 'X'
	}
	require.Equal(t, broker.AckItem{TransactionID: "abc", PartitionID: "def", Error: "ghi"}, item)
}

func TestCapErrorTextTruncatesAtACharacterWithAMarker(t *testing.T) {
	exact := strings.Repeat("e", maxAckErrorBytes)
	require.Equal(t, exact, capErrorText(exact), "at the cap: kept whole")
	require.Equal(t, "", capErrorText(""))

	long := strings.Repeat("x", 5<<20)
	require.Equal(t, strings.Repeat("x", maxAckErrorBytes)+"…[truncated: 5242880 bytes]", capErrorText(long))

	// A two-byte character straddling the cap is dropped whole, never split.
	straddle := strings.Repeat("a", maxAckErrorBytes-1) + "é" + "tail"
	got := capErrorText(straddle)
	require.Equal(t, strings.Repeat("a", maxAckErrorBytes-1)+"…[truncated: 8197 bytes]", got)
	require.True(t, utf8.ValidString(got))
}

// Issue 10: an ack's error text is capped (maxAckErrorBytes and a marker) on /ack, /ack/batch
// and transaction acks, so a 5 MiB reason no longer comes back on every DLQ read; the ack itself
// is applied.
func TestAckErrorTextIsCappedOnTheDLQEntry(t *testing.T) {
	huge := strings.Repeat("E", 5<<20)
	want := strings.Repeat("E", maxAckErrorBytes) + "…[truncated: 5242880 bytes]"
	ts := startRealServer(t)
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","transactionId":"a","payload":1},{"queue":"q","transactionId":"b","payload":2},{"queue":"q","transactionId":"c","payload":3}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/pop/queue/q?consumerGroup=g&batch=3", "")
	require.Equal(t, 200, r.status)
	env := r.json(t).(map[string]any)
	msgs := env["messages"].([]any)
	pid, lease := msgs[0].(map[string]any)["partitionId"].(string), env["leaseId"].(string)

	r = ts.do("POST", "/api/v1/ack", `{"transactionId":"a","partitionId":"`+pid+`","leaseId":"`+lease+`","consumerGroup":"g","status":"dlq","error":"`+huge+`"}`)
	require.Equal(t, 200, r.status, "%.200s", r.body)
	require.Equal(t, true, r.json(t).([]any)[0].(map[string]any)["success"])
	r = ts.do("POST", "/api/v1/ack/batch", `{"consumerGroup":"g","acknowledgments":[{"transactionId":"b","partitionId":"`+pid+`","leaseId":"`+lease+`","status":"dlq","error":"`+huge+`"}]}`)
	require.Equal(t, 200, r.status, "%.200s", r.body)
	r = ts.do("POST", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"c","partitionId":"`+pid+`","leaseId":"`+lease+`","consumerGroup":"g","status":"dlq","error":"`+huge+`"}]}`)
	require.Equal(t, 200, r.status, "%.200s", r.body)
	require.Equal(t, true, r.json(t).(map[string]any)["success"], "%.300s", r.body)

	r = ts.do("GET", "/api/v1/dlq?queue=q", "")
	require.Equal(t, 200, r.status)
	entries := r.json(t).(map[string]any)["messages"].([]any)
	require.Len(t, entries, 3)
	for _, e := range entries {
		require.Equal(t, want, e.(map[string]any)["errorMessage"])
	}
	require.Less(t, len(r.body), 3*(maxAckErrorBytes+1024), "the DLQ page carries three capped reasons, not 15 MiB")
}

// decodeAckBatch parses and validates an ack batch body (spec 4.2) with fastjson; the items'
// strings are copies. msg is the 400 message.
func decodeAckBatch(body []byte) (items []broker.AckItem, group, msg string) {
	parser := parserPool.Get()
	defer parserPool.Put(parser)
	return parseAckBatchBodyInto(parser, nil, body, true)
}

// appendAckResults copies a repeated queue and partition name's JSON from the result before
// (issue 23): the bytes must be what encoding each one gives, nulls and changes of name included.
func TestAppendAckResultsRepeatedNames(t *testing.T) {
	rs := []broker.AckResult{
		{Index: 0, TransactionID: "a", Success: true, QueueName: "q\"1", PartitionName: "p"},
		{Index: 1, TransactionID: "b", Success: true, QueueName: "q\"1", PartitionName: "p", LeaseReleased: true},
		{Index: 2, TransactionID: "c", Error: "Message not found"},
		{Index: 3, TransactionID: "d", Success: true, QueueName: "q2", PartitionName: "p", DLQ: true, AlreadyCommitted: true},
	}
	want := `[{"index":0,"transactionId":"a","success":true,"error":null,"queueName":"q\"1","partitionName":"p","leaseReleased":false,"dlq":false},` +
		`{"index":1,"transactionId":"b","success":true,"error":null,"queueName":"q\"1","partitionName":"p","leaseReleased":true,"dlq":false},` +
		`{"index":2,"transactionId":"c","success":false,"error":"Message not found","queueName":null,"partitionName":null,"leaseReleased":false,"dlq":false},` +
		`{"index":3,"transactionId":"d","success":true,"error":null,"queueName":"q2","partitionName":"p","leaseReleased":false,"dlq":true,"alreadyCommitted":true}]`
	require.Equal(t, want, string(appendAckResults(nil, rs)))
}
