package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/bench"
)

// Issue 14: `comb bench compare` runs a workload against two comb binaries in the same
// rounds. Here both sides are this test binary acting as comb (TestMain, COMB_TEST_AS_COMB):
// two rounds of a tiny push at sync always, each against a fresh server that is stopped and
// whose data directory is removed afterwards.
func TestBenchCompareThisBinaryWithItself(t *testing.T) {
	t.Setenv("COMB_TEST_AS_COMB", "1") // inherited by the servers the comparison starts
	self, err := os.Executable()
	require.NoError(t, err)
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := benchCompare([]string{
		"--baseline", self, "--candidate", self, "--workload", "push", "--rounds", "2",
		"--serve", "--sync always --log-level error", "--data-root", root,
		"--partitions", "2", "--concurrency", "2", "--batch", "10", "--duration", "500ms", "--warmup", "0s",
		"--json",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var cmp bench.Comparison
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &cmp), "the last line of stdout is the JSON report")
	assert.Empty(t, cmp.Error)
	assert.Equal(t, bench.WorkloadPush, cmp.Workload)
	assert.Equal(t, self, cmp.Baseline.Path)
	assert.Equal(t, cmp.Baseline.SHA256, cmp.Candidate.SHA256, "the same file on both sides")
	assert.Equal(t, []string{"--sync", "always", "--log-level", "error"}, cmp.Serve)

	var order []string
	pids := map[int]bool{}
	for _, r := range cmp.Runs {
		order = append(order, r.Side.String())
		res := r.Result
		assert.Positive(t, res.Messages, "round %d %s pushed", r.Round, r.Side)
		assert.Zero(t, res.ErrorsTotal, "round %d %s: %v", r.Round, r.Side, res.Errors)
		assert.Positive(t, res.ServerPID, "the server's process is the child the run started")
		pids[res.ServerPID] = true
		assert.Positive(t, res.ServerCPUMicrosPerRequest)
		require.NotNil(t, res.ServerSyncsPerRequest, "comb exposes its sync counter")
		assert.Positive(t, *res.ServerSyncsPerRequest, "sync always: pushes are fdatasync'd")
		require.NotNil(t, res.LoadAvg)
	}
	assert.Equal(t, []string{"baseline", "candidate", "candidate", "baseline"}, order)
	assert.Len(t, pids, 4, "a fresh server per run")

	metrics := map[string]bench.MetricRatio{}
	for _, m := range cmp.Ratios {
		metrics[m.Metric] = m
		assert.Len(t, m.Ratios, 2, "%s: one ratio per round", m.Metric)
	}
	assert.Contains(t, metrics, "msg/s")
	assert.Contains(t, metrics, "server CPU µs/request")
	assert.Contains(t, metrics, "server syncs/request")

	assert.Contains(t, stderr.String(), "comb bench compare: push, 2 rounds", "the text report goes to stderr with --json")
	assert.Contains(t, stderr.String(), "candidate ÷ baseline")
	left, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, left, "every run's data directory removed")
}

func TestBenchCompareRefusesBadInvocations(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no workload", []string{"--baseline", self}, "--workload is required"},
		{"unknown workload", []string{"--baseline", self, "--workload", "pull"}, `workload "pull"`},
		{"no baseline", []string{"--workload", "push"}, "--baseline is required"},
		{"missing baseline", []string{"--workload", "push", "--baseline", "/nonexistent/comb"}, "--baseline /nonexistent/comb"},
		{"serve sets the port", []string{"--workload", "push", "--baseline", self, "--serve", "--addr :1"}, "each run sets --addr and --data-dir itself"},
		{"zero rounds", []string{"--workload", "push", "--baseline", self, "--rounds", "0"}, "--rounds 0 is below 1"},
		{"cluster of 4", []string{"--workload", "push", "--baseline", self, "--cluster", "4"}, "--cluster 4 (want 0, 3 or 5)"},
		{"cluster consumes", []string{"--workload", "consume", "--baseline", self, "--cluster", "3"}, "the cluster shape pushes only"},
		{"cluster node named", []string{"--workload", "push", "--baseline", self, "--cluster", "3", "--serve", "--node-id n9"}, "a cluster run sets each node's identity"},
		{"stray argument", []string{"--workload", "push", "--baseline", self, "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := benchCompare(c.args, &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), c.want)
			assert.Empty(t, stdout.String(), "nothing ran")
		})
	}
}

// Issue 23: `comb bench compare --cluster 3` (bench/compare.sh's cluster shape) runs each side
// on one node and on a fresh local 3-node cluster with peer TLS, pushing through the leader:
// the leader's CPU is the server figure, the other two nodes' CPU is reported beside it, and
// each cluster run carries the one-node run of the same binary and the ratios over it.
func TestBenchCompareClusterShape(t *testing.T) {
	t.Setenv("COMB_TEST_AS_COMB", "1")
	self, err := os.Executable()
	require.NoError(t, err)
	root := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := benchCompare([]string{
		"--baseline", self, "--candidate", self, "--workload", "push", "--rounds", "1", "--cluster", "3",
		"--serve", "--log-level error", "--data-root", root,
		"--partitions", "2", "--concurrency", "2", "--batch", "10", "--duration", "500ms", "--warmup", "0s",
		"--json",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var cmp bench.Comparison
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &cmp))
	assert.Empty(t, cmp.Error)
	assert.Equal(t, 3, cmp.Cluster)
	require.Len(t, cmp.Runs, 2)
	for _, r := range cmp.Runs {
		res := r.Result
		assert.Equal(t, 3, res.ClusterNodes)
		assert.Positive(t, res.Messages, "%s pushed through the leader", r.Side)
		assert.Zero(t, res.ErrorsTotal, "%s: %v", r.Side, res.Errors)
		assert.Positive(t, res.ServerPID)
		require.Len(t, res.FollowerPIDs, 2, "the two other nodes")
		assert.NotContains(t, res.FollowerPIDs, res.ServerPID, "the leader is not a follower")
		assert.Positive(t, res.FollowerCPUMicrosPerRequest, "followers apply every push")
		require.NotNil(t, res.SingleNode, "the one-node run of the same binary")
		assert.Positive(t, res.SingleNode.Messages)
		assert.NotEqual(t, res.ServerPID, res.SingleNode.ServerPID, "a fresh server")
		assert.InDelta(t, res.MsgPerSec/res.SingleNode.MsgPerSec, res.ClusterRate, 1e-9)
		assert.InDelta(t, res.ServerCPUMicrosPerRequest/res.SingleNode.ServerCPUMicrosPerRequest, res.ClusterLeaderCPU, 1e-9)
	}
	metrics := map[string]bool{}
	for _, m := range cmp.Ratios {
		metrics[m.Metric] = true
	}
	assert.True(t, metrics["cluster ÷ one node msg/s"] && metrics["leader ÷ one node CPU/req"] && metrics["followers CPU µs/request"], "%v", metrics)
	assert.Contains(t, stderr.String(), "3 nodes: followers' CPU")
	left, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, left, "every node's data directory and the certificates removed")
}
