package httpapi

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/combmq/comb/names"
	"github.com/stretchr/testify/require"
)

// The streams decoders never panic, and what they accept obeys what the broker relies on
// (spec 10): ids present, names that pass names.Check, state values that are valid UTF-8 JSON.

func FuzzDecodeStreamQuery(f *testing.F) {
	for _, s := range []string{
		`{"name":"q","source_queue":"s","sink_queue":"o","config_hash":"h","reset":true}`,
		`{"name":"","source_queue":"s","config_hash":"h"}`, `{"name":1}`, `[]`, `{`, ``, `null`,
		"{\"name\":\"\xff\",\"source_queue\":\"s\",\"config_hash\":\"h\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, msg := decodeStreamQuery(body)
		if msg != "" {
			return
		}
		require.NotEmpty(t, req.Name)
		require.NotEmpty(t, req.ConfigHash)
		require.Empty(t, nameMsg(names.Queue, req.SourceQueue))
		if req.SinkQueue != "" {
			require.Empty(t, nameMsg(names.Queue, req.SinkQueue))
		}
	})
}

func FuzzDecodeStreamCycle(f *testing.F) {
	for _, s := range []string{
		`{"query_id":"Q","partition_id":"P","consumer_group":"g","state_ops":[{"type":"upsert","key":"k","value":{"a":1}},{"type":"delete","key":"d"}],"push_items":[{"queue":"s","payload":{"x":1},"transactionId":"t"}],"ack":{"transactionId":"t","leaseId":"L","status":"completed","count":2},"release_lease":false}`,
		`{"query_id":"Q","partition_id":"P","state_ops":null,"push_items":null,"ack":null}`,
		`{"query_id":"Q","partition_id":"P","state_ops":[1]}`, `{"query_id":"Q"}`, `{"ack":{}}`, `{`, `[]`,
		`{"query_id":"Q","partition_id":"P","state_ops":[{"type":"upsert","key":null},{"type":"delete"}],"push_items":{}}`,
		"{\"query_id\":\"Q\",\"partition_id\":\"P\",\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\",\"value\":\"\xff\"}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, msg := decodeStreamCycle(body)
		if msg != "" {
			return
		}
		require.NotEmpty(t, req.QueryID)
		require.NotEmpty(t, req.PartitionID)
		require.Empty(t, checkGroup(req.Group))
		for _, op := range req.StateOps {
			if op.Value != nil {
				require.True(t, json.Valid(op.Value), "%q", op.Value)
				require.True(t, utf8.Valid(op.Value), "%q", op.Value)
			}
			if op.Type == "upsert" {
				require.NotNil(t, op.Value, "an upsert always carries a value ({} when absent)")
			}
		}
		for _, it := range req.Push {
			require.Empty(t, nameMsg(names.Queue, it.Queue))
			require.Empty(t, checkTransactionID(it.TransactionID))
		}
		if req.Ack != nil {
			require.NotEmpty(t, req.Ack.TransactionID)
			require.GreaterOrEqual(t, req.Ack.Count, 0)
		}
	})
}

func FuzzDecodeStreamState(f *testing.F) {
	for _, s := range []string{
		`{"query_id":"Q","partition_id":"P","keys":["a"],"key_prefix":"w\u001f","ripe_at_or_before":15}`,
		`{"query_id":"Q","partition_id":"P","keys":null}`, `{"keys":[1]}`, `{"ripe_at_or_before":"x"}`, `{`,
	} {
		f.Add([]byte(s), []byte(`{"windowEnd":10}`))
	}
	f.Fuzz(func(t *testing.T, body, value []byte) {
		req, msg := decodeStreamState(body)
		if msg != "" {
			return
		}
		require.NotEmpty(t, req.QueryID)
		require.NotEmpty(t, req.PartitionID)
		if req.Match != nil {
			_ = req.Match(value) // any stored bytes: never a panic
		}
	})
}
