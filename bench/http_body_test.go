package bench

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type pushBody struct {
	Items []struct {
		Queue         string          `json:"queue"`
		Partition     string          `json:"partition"`
		TransactionID string          `json:"transactionId"`
		Payload       json.RawMessage `json:"payload"`
	} `json:"items"`
}

func TestAppendPushBody(t *testing.T) {
	cases := []struct {
		name string
		n    int
		size int
	}{
		{"one item", 1, 200},
		{"batch of 100 with 200-byte payloads (issue 6 shape)", 100, 200},
		{"tiny untimed payloads", 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPayload(tc.size)
			p.Stamp(123)
			body := AppendPushBody([]byte("garbage-to-keep"), "bench-r1-q0", "p7", "r1-w3", 40, p.Bytes(), tc.n)
			body = body[len("garbage-to-keep"):]
			require.True(t, json.Valid(body), "push body is not valid JSON")
			var got pushBody
			require.NoError(t, json.Unmarshal(body, &got))
			require.Len(t, got.Items, tc.n)
			for i, it := range got.Items {
				assert.Equal(t, "bench-r1-q0", it.Queue)
				assert.Equal(t, "p7", it.Partition)
				assert.Equal(t, "r1-w3-"+strconv.Itoa(40+i), it.TransactionID, "transactionIds count up from firstSeq")
				assert.Len(t, []byte(it.Payload), tc.size, "payload is the requested number of bytes")
				assert.Equal(t, p.Bytes(), []byte(it.Payload), "payload written through unchanged")
			}
		})
	}
}

func TestAppendPushBodyEscapesNames(t *testing.T) {
	body := AppendPushBody(nil, "q\"uote\\", "p\n", "tx", 0, []byte(`null`), 1)
	var got pushBody
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, "q\"uote\\", got.Items[0].Queue)
	assert.Equal(t, "p\n", got.Items[0].Partition)
}

func TestAppendPopURI(t *testing.T) {
	cases := []struct {
		name, queue, group string
		batch, waitMs      int
		want               string
	}{
		{"queue mode, no wait", "bench-r-q0", "", 100, 0, "/api/v1/pop/queue/bench-r-q0?batch=100&partitions=1"},
		{"named group", "orders", "billing", 10, 0, "/api/v1/pop/queue/orders?batch=10&partitions=1&consumerGroup=billing"},
		{"long-poll (spec 3.6)", "orders", "", 1, 1000, "/api/v1/pop/queue/orders?batch=1&partitions=1&wait=true&timeout=1000"},
		{"names escaped (spec 0.3)", "a b", "g/1", 5, 0, "/api/v1/pop/queue/a%20b?batch=5&partitions=1&consumerGroup=g%2F1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(AppendPopURI(nil, tc.queue, tc.group, tc.batch, tc.waitMs)))
		})
	}
}

func TestAppendAckBatchBody(t *testing.T) {
	items := []ackItem{
		{txID: []byte("t1"), partitionID: []byte("p-1"), leaseID: []byte("l-1")},
		{txID: []byte("t2"), partitionID: []byte("p-2")},
	}
	cases := []struct {
		name, group, want string
	}{
		{"queue mode omits consumerGroup", "",
			`{"acknowledgments":[{"transactionId":"t1","partitionId":"p-1","leaseId":"l-1","status":"completed"},{"transactionId":"t2","partitionId":"p-2","status":"completed"}]}`},
		{"named group for all items (spec 4.2)", "g",
			`{"acknowledgments":[{"transactionId":"t1","partitionId":"p-1","leaseId":"l-1","status":"completed"},{"transactionId":"t2","partitionId":"p-2","status":"completed"}],"consumerGroup":"g"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendAckBatchBody(nil, tc.group, items)
			assert.JSONEq(t, tc.want, string(got))
			assert.Equal(t, tc.want, string(got))
		})
	}
}

// AppendAckBatchBody appends the whole body of POST /api/v1/ack/batch (spec 4.2); group ""
// omits consumerGroup (queue mode).
func AppendAckBatchBody(dst []byte, group string, items []ackItem) []byte {
	dst = append(dst, `{"acknowledgments":[`...)
	for i, it := range items {
		dst = appendAckItem(dst, i == 0, it)
	}
	return appendAckTail(dst, group)
}
