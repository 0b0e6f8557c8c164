package httpapi

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/report"
	"github.com/combmq/comb/version"
)

// promFamilies maps every family of an exposition to its TYPE.
func promFamilies(text string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// Issue 25: counters are counters named _total, the build is labelled, the runtime and process
// collectors are there, lag is per (queue, consumer group), and the data directory's figures
// are exported, each with the value the backend reports.
func TestPrometheusConventions(t *testing.T) {
	fake := newFake()
	fake.groups = []report.GroupSummary{
		{Name: "g1", Queue: "orders", Members: 2, PartitionsWithLag: 1, TotalLag: 17, MaxTimeLagSeconds: 42},
		{Name: "__QUEUE_MODE__", Queue: "mails", Members: 1},
	}
	fake.storage = report.StorageStatus{DataBytes: 123456, DataFiles: 12, DiskFreeBytes: 1 << 30, DiskTotalBytes: 1 << 34,
		CommitLogBytes: 4096, FlushPasses: 3, LastFlushAt: time.Unix(1700000000, 500_000_000), LastFlushDuration: 1500 * time.Microsecond,
		LastFlushErr: "sync: no space"}
	ts := startServer(t, fake, Config{})
	ts.do("GET", "/health", "")
	ts.do("GET", "/health", "")
	text := string(ts.do("GET", "/metrics/prometheus", "").body)
	types := promFamilies(text)

	for name, typ := range types {
		if typ == "counter" {
			require.True(t, strings.HasSuffix(name, "_total"), "counter %s has no _total", name)
		}
	}
	require.Equal(t, "counter", types["comb_http_requests_total"])
	require.NotContains(t, types, "comb_http_requests", "the old gauge is gone")
	require.Equal(t, "gauge", types["go_goroutines"])
	require.Equal(t, "gauge", types["process_resident_memory_bytes"])
	require.Equal(t, "counter", types["process_cpu_seconds_total"])
	in := version.Read()
	for _, line := range []string{
		`comb_build_info{goversion="` + in.Go + `",revision="` + in.Revision + `",version="` + in.Short() + `"} 1`,
		`comb_http_requests_total 3`, // the two /health and this scrape, counted as it arrives
		`comb_consumer_group_lag_messages{consumer_group="g1",queue="orders"} 17`,
		`comb_consumer_group_lag_seconds{consumer_group="g1",queue="orders"} 42`,
		`comb_consumer_group_lagging_partitions{consumer_group="g1",queue="orders"} 1`,
		`comb_consumer_group_lag_messages{consumer_group="__QUEUE_MODE__",queue="mails"} 0`,
		`comb_data_directory_bytes 123456`,
		`comb_data_directory_files 12`,
		`comb_disk_free_bytes 1.073741824e+09`,
		`comb_disk_total_bytes 1.7179869184e+10`,
		`comb_commit_log_bytes 4096`,
		`comb_flush_passes_total 3`,
		`comb_flush_pass_last_duration_seconds 0.0015`,
		`comb_flush_pass_last_end_timestamp_seconds 1.7000000005e+09`,
		`comb_flush_pass_failing 1`,
		`comb_storage_read_errors{what="walk"} 0`,
	} {
		require.Contains(t, text, line+"\n")
	}
}

// promtool (Debian's prometheus package; .ci/run installs it) finds nothing in a real server's
// exposition but Queen's kept names, and accepts the example alert rules.
func TestPromtoolChecksExpositionAndAlertRules(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed (apt-get install prometheus)")
		}
		t.Skip("promtool not installed (apt-get install prometheus); CI runs this")
	}
	ts := startRealServer(t)
	ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"p","payload":1},{"queue":"q","partition":"p","payload":2}]}`)
	ts.do("GET", "/api/v1/pop/queue/q?consumerGroup=g1&batch=1", "")
	body := ts.do("GET", "/metrics/prometheus", "").body
	if testTarget(t) != "" {
		// A cluster node also has raft's own metrics (prometheus_raft.go); the sink is
		// process-wide, so the in-process cluster's leader's commits show on any node.
		require.Contains(t, string(body), "# TYPE comb_raft_commit_time_seconds summary\n")
		require.Contains(t, string(body), "comb_raft_has_leader 1\n")
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(body))
	out, _ := cmd.CombinedOutput()
	var probs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.HasPrefix(l, "queen_") {
			probs = append(probs, l)
		}
	}
	require.Empty(t, probs)
	require.Equal(t, `queen_queue_pop_lag_milliseconds use base unit "seconds" instead of "milliseconds"`, strings.TrimSpace(string(out)),
		"the one kept name promtool flags (docs/operations.md lists it)")

	out, err = exec.Command(bin, "check", "rules", "../docs/alerts.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS")
}

// raft's go-metrics reach the registry in snake_case under comb_, timings in seconds, counters
// with _total, labels kept.
func TestGoMetricsBridge(t *testing.T) {
	g := &goMetricsBridge{series: map[string]*bridged{}}
	g.IncrCounter([]string{"raft", "state", "leader"}, 1)
	g.IncrCounter([]string{"raft", "state", "leader"}, 1)
	g.AddSample([]string{"raft", "commitTime"}, 4)
	g.AddSample([]string{"raft", "commitTime"}, 6)
	g.AddSampleWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, 2, []gmLabel{{Name: "peer_id", Value: "n2"}})
	g.AddSample([]string{"raft", "fsm", "applyBatchNum"}, 64)
	g.SetGauge([]string{"raft", "peers"}, 2)
	g.SetGauge([]string{"raft", "fsm", "lastRestoreDuration"}, 250)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(g)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP comb_raft_commit_time_seconds hashicorp/raft's raft.commitTime timing, in seconds (go-metrics sample: count and sum).
# TYPE comb_raft_commit_time_seconds summary
comb_raft_commit_time_seconds_sum 0.01
comb_raft_commit_time_seconds_count 2
# HELP comb_raft_fsm_apply_batch_num hashicorp/raft's raft.fsm.applyBatchNum (go-metrics sample: count and sum).
# TYPE comb_raft_fsm_apply_batch_num summary
comb_raft_fsm_apply_batch_num_sum 64
comb_raft_fsm_apply_batch_num_count 1
# HELP comb_raft_fsm_last_restore_duration_seconds hashicorp/raft's raft.fsm.lastRestoreDuration gauge, in seconds.
# TYPE comb_raft_fsm_last_restore_duration_seconds gauge
comb_raft_fsm_last_restore_duration_seconds 0.25
# HELP comb_raft_peers hashicorp/raft's raft.peers gauge.
# TYPE comb_raft_peers gauge
comb_raft_peers 2
# HELP comb_raft_replication_append_entries_rpc_seconds hashicorp/raft's raft.replication.appendEntries.rpc timing, in seconds (go-metrics sample: count and sum).
# TYPE comb_raft_replication_append_entries_rpc_seconds summary
comb_raft_replication_append_entries_rpc_seconds_sum{peer_id="n2"} 0.002
comb_raft_replication_append_entries_rpc_seconds_count{peer_id="n2"} 1
# HELP comb_raft_state_leader_total hashicorp/raft's raft.state.leader counter.
# TYPE comb_raft_state_leader_total counter
comb_raft_state_leader_total 2
`)))
	// Issue 23: raft reports a few samples per committed entry; once its series exists a
	// report allocates nothing (the leader paid ~3 % of its CPU for the names before).
	peer := []gmLabel{{Name: "peer_id", Value: "n2"}}
	allocs := testing.AllocsPerRun(100, func() {
		g.AddSampleWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, 2, peer)
		g.IncrCounter([]string{"raft", "state", "leader"}, 1)
		g.SetGauge([]string{"raft", "peers"}, 2)
	})
	if raceDetector {
		// The pooled ids are dropped now and then under -race (make test): at most one
		// allocation a sample, never the names' strings.
		assert.LessOrEqual(t, allocs, 3.0)
	} else {
		assert.Zero(t, allocs)
	}
	// Two label orders of one series are one series.
	g.AddSampleWithLabels([]string{"raft", "x"}, 1, []gmLabel{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}})
	g.AddSampleWithLabels([]string{"raft", "x"}, 1, []gmLabel{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}})
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP comb_raft_x_seconds hashicorp/raft's raft.x timing, in seconds (go-metrics sample: count and sum).
# TYPE comb_raft_x_seconds summary
comb_raft_x_seconds_sum{a="1",b="2"} 0.002
comb_raft_x_seconds_count{a="1",b="2"} 2
`), "comb_raft_x_seconds"))
	require.Equal(t, "append_entries", snake("appendEntries"))
	require.Equal(t, "heartbeat_timeout", snake("heartbeat_timeout"))
	require.Equal(t, "a_b_c", snake("a.b-c"))
}
