package httpapi

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// A follower applies a committed transaction (its Tx entry moves cursors) and must still close
// without error: its cursor state is the leader's, already in the raft log, and a node that
// does not lead cannot append a checkpoint of its own. Found by the real-broker tests under
// COMB_TEST_TARGET (every test that acked through /api/v1/transaction, /ack with status dlq or
// a streams cycle failed its cleanup with "cursor checkpoint failed (retrying): replica: not
// the leader", and the follower's /health said "degraded" meanwhile); fixed in the broker
// (cursor.Engine.Put on a follower). A cluster test: it runs under COMB_TEST_TARGET (make
// test-cluster-http).
func TestFollowerThatAppliedATransactionClosesCleanly(t *testing.T) {
	if testTarget(t) == "" {
		t.Skipf("a cluster test: set %s=follower or leader (make test-cluster-http)", targetEnv)
	}
	ts, _, stop := serveCluster(t, broker.Config{DataDir: t.TempDir(), Sync: "never", Logger: zerolog.Nop()}, "follower")
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"p","transactionId":"a","payload":1}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/pop/queue/q?consumerGroup=g", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	env := r.json(t).(map[string]any)
	pid := env["messages"].([]any)[0].(map[string]any)["partitionId"].(string)
	r = ts.do("POST", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"a","partitionId":"`+pid+
		`","leaseId":"`+env["leaseId"].(string)+`","consumerGroup":"g","status":"completed"}]}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t).(map[string]any)["success"], "%s", r.body)
	ts.awaitApplied()
	stop() // closes every node's broker: require.NoError on each
}

// The switch reaches the node it names: /health (the node's own route) says its role, and a
// follower hands a request to the leader (comb_http_forwarded_total).
func TestClusterTargetIsTheNodeAsked(t *testing.T) {
	target := testTarget(t)
	if target == "" {
		t.Skipf("a cluster test: set %s=follower or leader (make test-cluster-http)", targetEnv)
	}
	ts := startRealServer(t)
	h := ts.do("GET", "/health", "")
	require.Equal(t, 200, h.status, "%s", h.body)
	require.Equal(t, target, h.json(t).(map[string]any)["role"], "%s", h.body)
	require.Equal(t, 200, ts.do("GET", "/api/v1/resources/queues", "").status)
	relayed := map[string]string{"leader": "0", "follower": "1"}[target]
	require.Contains(t, string(ts.do("GET", "/metrics/prometheus", "").body), `comb_http_forwarded_total{outcome="relayed"} `+relayed+"\n")
}
