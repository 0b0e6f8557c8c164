package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// issue 10: a full disk is a state: /health says "degraded" with the reason while cursor
// checkpoints fail (paths cut to base names), and stays 200 (the server serves pushes and
// recovers by itself).
func TestHealthIsDegradedWhileCheckpointsFail(t *testing.T) {
	fake := newFake()
	fake.ckptFail = &broker.CheckpointFailure{SinceMicros: 1785402764881042,
		Reason: "cursor checkpoint failed (retrying): cursor journal /var/lib/comb/cursor/journal-0000000000000007.v2.log: write checkpoint 7 at byte 4096: no space left on device"}
	ts := startServer(t, fake, Config{Version: "1.2.3"})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"degraded","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "reason":"cursor checkpoints failing: cursor checkpoint failed (retrying): cursor journal journal-0000000000000007.v2.log: write checkpoint 7 at byte 4096: no space left on device",
	 "checkpoint":{"error":"cursor checkpoint failed (retrying): cursor journal journal-0000000000000007.v2.log: write checkpoint 7 at byte 4096: no space left on device",
	  "since":"2026-07-30T09:12:44.881Z","retrying":true,"action":"free disk space; the server retries by itself"}}`)

	fake.ckptFail = nil
	r = ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"healthy","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"}}`)
}

// issue 10: a failed fdatasync leaves the cursor journal unusable until a restart: 503.
func TestHealthIs503AfterAStickyCheckpointFailure(t *testing.T) {
	fake := newFake()
	fake.healthy = false
	fake.ckptFail = &broker.CheckpointFailure{SinceMicros: 1785402764881042, Sticky: true,
		Reason: "cursor checkpoint failed, journal unusable until restart: fdatasync: input/output error"}
	ts := startServer(t, fake, Config{Version: "1.2.3"})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 503, `{"status":"unhealthy","database":"disconnected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "reason":"cursor checkpoints failing: cursor checkpoint failed, journal unusable until restart: fdatasync: input/output error",
	 "checkpoint":{"error":"cursor checkpoint failed, journal unusable until restart: fdatasync: input/output error",
	  "since":"2026-07-30T09:12:44.881Z","retrying":false,"action":"check the disk, then restart the server"}}`)
}

// issue 15: a node of a replicated cluster says its role and its leader; a single node's
// answer is unchanged (the tests above).
func TestHealthSaysTheRoleAndTheLeaderOfAReplicatedNode(t *testing.T) {
	fake := newFake()
	fake.repl = &broker.ReplicationStatus{Role: "follower", LeaderID: "n1", LeaderAddr: "127.0.0.1:7001", AppliedLSN: 42}
	cluster := &fakeCluster{self: "n2", id: "n1", addr: "10.0.0.1:6632"}
	ts := startServer(t, fake, Config{Version: "1.2.3", Cluster: cluster})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"healthy","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "role":"follower","leader":{"id":"n1","raftAddr":"127.0.0.1:7001","httpAddr":"10.0.0.1:6632"},"appliedLSN":42}`)

	// The leader's announcement has not reached this node yet: where to forward is unknown.
	cluster.addr = ""
	r = ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"healthy","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "role":"follower","leader":{"id":"n1","raftAddr":"127.0.0.1:7001","httpAddr":null},"appliedLSN":42}`)

	// No leader known (an election; a node waiting to be added, or removed): degraded, with why.
	fake.setRepl(&broker.ReplicationStatus{Role: "follower"})
	r = ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"degraded","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},"role":"follower","leader":null,"appliedLSN":0,
	 "reason":"no cluster leader known: an election is under way, or this node is not (yet) a member of the cluster"}`)
}

// issue 15: a replicated node's role, applied LSN, leader changes and commit latency reach
// /metrics/prometheus; a single node has none of these families.
func TestReplicationMetrics(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	body := string(ts.do("GET", "/metrics/prometheus", "").body)
	if testTarget(t) == "" {
		// raft's own metrics come through a process-wide bridge: a test process that runs a
		// cluster (COMB_TEST_TARGET) has them whatever this server is.
		require.NotContains(t, body, "comb_raft_")
	}

	fake.setRepl(&broker.ReplicationStatus{Role: "leader", LeaderID: "n1", AppliedLSN: 42, LeaderTerms: 2,
		CommitLatency: broker.LatencyHistogram{BoundsMicros: []int64{1000}, Counts: []uint64{3, 4}, Count: 4, SumMicros: 2500}})
	body = string(ts.do("GET", "/metrics/prometheus", "").body)
	for _, line := range []string{
		`comb_raft_is_leader 1`,
		`comb_raft_applied_lsn 42`,
		`comb_raft_leader_changes_total{scope="cluster"} 2`,
		`# TYPE comb_raft_commit_latency_seconds histogram`,
		`comb_raft_commit_latency_seconds_count 4`,
	} {
		require.Contains(t, body, line+"\n")
	}
}
