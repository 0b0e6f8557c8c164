package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// issue 11: a payload the broker could not decrypt is answered with "data": null and a
// "decryptionError", never the ciphertext, on pop and on DLQ reads.
func TestDecryptionErrorEncoded(t *testing.T) {
	fake := newFake()
	reason := "the payload is encrypted and cannot be decrypted: it was sealed with a key this broker does not hold"
	fake.onPop = func(context.Context, broker.PopRequest) (broker.PopResult, error) {
		return broker.PopResult{Queue: "enc", Partition: "p", PartitionID: "pid", LeaseID: "l", Group: "__QUEUE_MODE__",
			PartitionsClaimed: 1, Messages: []broker.Message{
				{ID: "m1", TransactionID: "t1", PayloadError: reason, Queue: "enc", Partition: "p", PartitionID: "pid"},
				{ID: "m2", TransactionID: "t2", Payload: []byte(`{"ok":1}`), Queue: "enc", Partition: "p", PartitionID: "pid"},
			}}, nil
	}
	fake.dlqEntries = []report.DLQEntry{{ID: "m1", TransactionID: "t1", Queue: "enc", PayloadError: reason}}
	fake.dlqTotal = 1
	ts := startServer(t, fake, Config{})

	pop := ts.do("GET", "/api/v1/pop/queue/enc", "").json(t).(map[string]any)
	msgs := pop["messages"].([]any)
	first, second := msgs[0].(map[string]any), msgs[1].(map[string]any)
	require.Contains(t, first, "data")
	require.Nil(t, first["data"])
	require.Equal(t, reason, first["decryptionError"])
	require.Equal(t, map[string]any{"ok": float64(1)}, second["data"])
	require.NotContains(t, second, "decryptionError")

	dlq := ts.do("GET", "/api/v1/dlq", "").json(t).(map[string]any)
	entry := dlq["messages"].([]any)[0].(map[string]any)
	require.Nil(t, entry["data"])
	require.Equal(t, reason, entry["decryptionError"])
}

// The encryption counters reach /metrics/prometheus.
func TestEncryptionMetrics(t *testing.T) {
	fake := newFake()
	fake.stats = broker.Stats{PayloadsSealed: 7, PayloadOpenFailures: 2, PayloadsStoredPlain: 3}
	ts := startServer(t, fake, Config{})
	body := string(ts.do("GET", "/metrics/prometheus", "").body)
	require.Contains(t, body, `comb_payloads_sealed_total{scope="cluster"} 7`)
	require.Contains(t, body, `comb_payload_decrypt_failures_total{scope="cluster"} 2`)
	require.Contains(t, body, `comb_payloads_stored_plain_total{scope="cluster"} 3`)
}
