package bench

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"
)

func TestCountPushFailures(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		want    int
		wantErr bool
	}{
		{"all queued (spec 1.6)", `[{"index":0,"status":"queued","transaction_id":"a"},{"index":1,"status":"duplicate"}]`, 0, false},
		{"empty array", `[]`, 0, false},
		{"one failed of three", `[{"status":"queued"},{"status":"failed","error":"Queue 'q' would exceed max capacity"},{"status":"queued"}]`, 1, false},
		{"the word failed inside a transactionId is not a failure", `[{"status":"queued","transaction_id":"failed-1"}]`, 0, false},
		{"whitespace around the array", " \n[{\"status\": \"failed\"}]\n", 1, false},
		{"an object is not the push shape", `{"error":"items array is required"}`, 0, true},
		{"truncated", `[{"status":"queued"`, 0, true},
	}
	var p fastjson.Parser
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountPushFailures(&p, []byte(tc.body))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadResponse)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCountAckFailures(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		want    int
		wantErr bool
	}{
		{"all applied (spec 4.4)", `[{"index":0,"success":true,"error":null},{"index":1,"success":true,"error":null}]`, 0, false},
		{"expired lease and clamp", `[{"success":false,"error":"Invalid or expired lease"},{"success":true},{"success":false,"error":"Not applied: an earlier message in this partition was released for retry"}]`, 2, false},
		{"missing success counts as failed", `[{"index":0}]`, 1, false},
		{"not JSON", `oops`, 0, true},
		{"not an array", `{"error":"acknowledgments array is required"}`, 0, true},
	}
	var p fastjson.Parser
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountAckFailures(&p, []byte(tc.body))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadResponse)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParsePop(t *testing.T) {
	body := `{"success":true,"queue":"q","partition":"p0","partitionId":"pid-0","leaseId":"lease-env","consumerGroup":"g","partitionsClaimed":2,
	 "messages":[
	  {"id":"m1","transactionId":"tx-1","traceId":null,"data":{"t":1764374400000000001,"pad":"x"},"partitionId":"pid-0","partition":"p0","leaseId":"lease-env"},
	  {"id":"m2","transactionId":"tx-2","data":{"pad":"x", "t": 1764374400000000002},"partitionId":"pid-1","partition":"p1"},
	  {"id":"m3","transactionId":"tx-3","data":"plain","partitionId":"pid-1","partition":"p1","leaseId":"lease-env"}]}`
	var p fastjson.Parser
	var b PoppedBatch
	require.NoError(t, ParsePop(&p, []byte(body), "g", true, &b))
	assert.Equal(t, 3, b.Len())
	assert.Equal(t, int64(1764374400000000001), b.SentNanos(0))
	assert.Equal(t, int64(1764374400000000002), b.SentNanos(1), "spaces and key order a server may introduce")
	assert.Equal(t, int64(0), b.SentNanos(2), "payload without a time")
	assert.Equal(t, int64(0), b.SentNanos(3), "out of range")

	var ack struct {
		Acknowledgments []map[string]string `json:"acknowledgments"`
		ConsumerGroup   string              `json:"consumerGroup"`
	}
	require.NoError(t, json.Unmarshal(b.AckBody(), &ack), "%s", b.AckBody())
	assert.Equal(t, "g", ack.ConsumerGroup)
	assert.Equal(t, []map[string]string{
		{"transactionId": "tx-1", "partitionId": "pid-0", "leaseId": "lease-env", "status": "completed"},
		{"transactionId": "tx-2", "partitionId": "pid-1", "leaseId": "lease-env", "status": "completed"}, // envelope lease when the message has none
		{"transactionId": "tx-3", "partitionId": "pid-1", "leaseId": "lease-env", "status": "completed"},
	}, ack.Acknowledgments, "each message acked with its own partitionId (spec 3.3: authoritative for ack)")

	t.Run("reuse without times", func(t *testing.T) {
		require.NoError(t, ParsePop(&p, []byte(`{"leaseId":"","messages":[{"transactionId":"a","partitionId":"b"}]}`), "", false, &b))
		assert.Equal(t, 1, b.Len())
		assert.Equal(t, int64(0), b.SentNanos(0))
		assert.Equal(t, `{"acknowledgments":[{"transactionId":"a","partitionId":"b","status":"completed"}]}`, string(b.AckBody()), "autoAck pops carry leaseId \"\": no lease in the ack")
	})
	t.Run("message without partitionId is malformed", func(t *testing.T) {
		err := ParsePop(&p, []byte(`{"messages":[{"transactionId":"a"}]}`), "", false, &b)
		require.ErrorIs(t, err, ErrBadResponse)
	})
	t.Run("invalid JSON", func(t *testing.T) {
		require.ErrorIs(t, ParsePop(&p, []byte(`{"messages":[`), "", false, &b), ErrBadResponse)
	})
}
