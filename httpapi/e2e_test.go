package httpapi

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// startRealServer serves a real broker on t.TempDir() (sync never: this is about the wire, not
// durability; the broker's own tests own the rules), or a node of a 3-node cluster under
// COMB_TEST_TARGET (serveReal).
func startRealServer(t *testing.T) *testServer {
	t.Helper()
	ts, _ := startRealServerWithBroker(t)
	return ts
}

func TestEndToEndSmokeAgainstTheRealBroker(t *testing.T) {
	ts := startRealServer(t)

	r := ts.do("POST", "/api/v1/configure", `{"queue":"smoke","namespace":"ns","options":{"leaseTime":30,"retryLimit":2}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	cfg := r.json(t).(map[string]any)
	require.Equal(t, true, cfg["configured"])
	require.Equal(t, float64(30), cfg["options"].(map[string]any)["leaseTime"])

	r = ts.do("POST", "/api/v1/push", `{"items":[
	 {"queue":"smoke","partition":"p1","transactionId":"t0","payload":{"n":0, "s":"h\u00e9llo"}},
	 {"queue":"smoke","partition":"p1","transactionId":"t1","payload":[1,2]},
	 {"queue":"smoke","partition":"p1","transactionId":"t0","payload":"dup"}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	pushed := r.json(t).([]any)
	require.Len(t, pushed, 3)
	require.Equal(t, "queued", pushed[0].(map[string]any)["status"])
	require.Equal(t, "duplicate", pushed[2].(map[string]any)["status"])
	require.Equal(t, pushed[0].(map[string]any)["message_id"], pushed[2].(map[string]any)["messageId"])

	r = ts.do("GET", "/api/v1/pop/queue/smoke?consumerGroup=g&batch=10", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Contains(t, string(r.body), `"data":{"n":0, "s":"h\u00e9llo"}`, "payload bytes come back unchanged")
	env := r.json(t).(map[string]any)
	msgs := env["messages"].([]any)
	require.Len(t, msgs, 2)
	m0, m1 := msgs[0].(map[string]any), msgs[1].(map[string]any)
	require.Equal(t, "t0", m0["transactionId"])
	require.Equal(t, "t1", m1["transactionId"])
	require.Equal(t, m0["createdAt"], m1["createdAt"], "one push, one segment timestamp")
	require.Equal(t, "g", m0["consumerGroup"])
	require.Equal(t, "smoke", m0["queue"])

	r = ts.do("GET", "/api/v1/pop/queue/smoke?consumerGroup=g&batch=10", "")
	require.Equal(t, 204, r.status, "leased: nothing for a second consumer")
	require.Empty(t, r.body)

	r = ts.do("POST", "/api/v1/lease/"+env["leaseId"].(string)+"/extend", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, float64(1), r.json(t).(map[string]any)["renewed"])

	ack := fmt.Sprintf(`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t0","partitionId":%q,"leaseId":%q},
	 {"transactionId":"t1","partitionId":%q,"leaseId":%q,"status":"completed"}]}`,
		m0["partitionId"], env["leaseId"], m1["partitionId"], env["leaseId"])
	r = ts.do("POST", "/api/v1/ack/batch", ack)
	require.Equal(t, 200, r.status, "%s", r.body)
	for _, x := range r.json(t).([]any) {
		require.Equal(t, true, x.(map[string]any)["success"], "%s", r.body)
	}

	r = ts.do("GET", "/api/v1/pop/queue/smoke?consumerGroup=g&batch=10&wait=true&timeout=50", "")
	require.Equal(t, 204, r.status, "all acked; long-poll times out")

	r = ts.do("GET", "/api/v1/pop?namespace=ns&consumerGroup=d&autoAck=true", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, "", r.json(t).(map[string]any)["queue"])

	r = ts.do("GET", "/api/v1/consumer-groups", "")
	require.Equal(t, 200, r.status)
	require.NotEmpty(t, r.json(t).([]any))

	r = ts.do("GET", "/health", "")
	require.Equal(t, 200, r.status)
	r = ts.do("GET", "/metrics/prometheus", "")
	require.Equal(t, 200, r.status)
	t.Run("push counter", func(t *testing.T) {
		skipOnFollower(t, "/metrics/prometheus is the node's own (forward.go): the leader counted the pushes this follower forwarded")
		require.Contains(t, string(r.body), `queen_cluster_push_messages_total{scope="cluster"} 2`)
	})

	r = ts.do("DELETE", "/api/v1/resources/queues/smoke", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, true, r.json(t).(map[string]any)["existed"])
}
