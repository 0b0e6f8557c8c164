package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/combmq/comb/names"
	"github.com/stretchr/testify/require"
)

// The decoders never panic, and whatever they accept obeys the rules the broker relies on:
// names pass names.Check, payloads are valid JSON kept byte for byte.

func FuzzDecodePush(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"queue":"q","payload":{"a":1}}]}`,
		`{"items":[{"queue":"q","partition":"p","transactionId":"t","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","payload":[1,"2",null]}]}`,
		`{"items":[]}`, `{"items":{}}`, `{}`, `[]`, `{"items":[{"queue":1}]}`, `{"items":[{"queue":"..\u0000"}]}`,
		`{"items":[{"queue":"q","payload":"\ud800"}]}`, ``, `{`,
		"{\"items\":[{\"queue\":\"q\",\"payload\":{\"x\":\"\xff\xfe\"}}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, msg := decodePush(body)
		if msg != "" {
			require.Nil(t, items)
			return
		}
		for _, it := range items {
			require.Empty(t, nameMsg(names.Queue, it.Queue))
			if it.Partition != "" {
				require.Empty(t, nameMsg(names.Partition, it.Partition))
			}
			require.Empty(t, checkTransactionID(it.TransactionID))
			require.Empty(t, checkTraceID(it.TraceID))
			if it.Payload != nil {
				require.True(t, json.Valid(it.Payload), "%q", it.Payload)
				require.True(t, utf8.Valid(it.Payload), "payload %q is not UTF-8 (issue 10)", it.Payload)
				require.True(t, bytes.Contains(body, it.Payload), "payload %q is not a verbatim slice of the body", it.Payload)
			}
		}
	})
}

func FuzzDecodeAckBatch(f *testing.F) {
	for _, s := range []string{
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":"failed","leaseId":"L","error":"e"}],"consumerGroup":"g"}`,
		`{"acknowledgments":[]}`, `{"acknowledgments":[1]}`, `{}`, `[]`, `{"acknowledgments":[{"transactionId":"t\u0000","partitionId":"p"}]}`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, group, msg := decodeAckBatch(body)
		// The handler's path (strings aliasing the parser) reads the same.
		parser := parserPool.Get()
		aItems, aGroup, aMsg := parseAckBatchBodyInto(parser, nil, body, false)
		require.Equal(t, msg, aMsg)
		require.Equal(t, group, aGroup)
		require.Equal(t, items, aItems)
		parserPool.Put(parser)
		if msg != "" {
			return
		}
		require.Empty(t, checkGroup(group))
		for _, it := range items {
			require.NotEmpty(t, it.TransactionID)
			require.NotEmpty(t, it.PartitionID)
			require.Empty(t, checkTransactionID(it.TransactionID))
			require.LessOrEqual(t, len(it.Error), maxAckErrorBytes+40, "error text is capped (issue 10)")
		}
		_, _, _ = decodeAck(body)
	})
}

func FuzzDecodeConfigure(f *testing.F) {
	for _, s := range []string{
		`{"queue":"q","namespace":"n","task":null,"options":{"leaseTime":"30","retentionEnabled":true,"ttl":1e3}}`,
		`{"queue":""}`, `{"options":[]}`, `{"queue":"q","options":{"ttl":1.5}}`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, msg := decodeConfigure(body)
		if msg == "" {
			require.Empty(t, nameMsg(names.Queue, req.Queue))
			require.Empty(t, labelMsg(names.Namespace, req.Namespace))
			require.Empty(t, labelMsg(names.Task, req.Task))
		}
	})
}

func FuzzDecodeTransaction(f *testing.F) {
	for _, s := range []string{
		`{"operations":[{"type":"push","items":[{"queue":"q","payload":1}]},{"type":"ack","transactionId":"t","partitionId":"p"}]}`,
		`{"operations":[]}`, `{"operations":[{"type":"x"}]}`, `{"operations":[{"type":"push","items":{}}]}`, `{`,
		"{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"q\",\"payload\":\"\xc3\"}]}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, msg := decodeTransaction(body)
		if msg != "" {
			return
		}
		require.NotEmpty(t, ops)
		for _, op := range ops {
			require.Contains(t, []string{"push", "ack"}, op.Type)
			if op.Type == "push" && op.Push.Payload != nil {
				require.True(t, json.Valid(op.Push.Payload), "%q", op.Push.Payload)
				require.True(t, utf8.Valid(op.Push.Payload), "payload %q is not UTF-8 (issue 10)", op.Push.Payload)
			}
		}
	})
}
