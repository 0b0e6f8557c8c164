package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckServeArgsKeepsAddrAndDataDirToTheComparison(t *testing.T) {
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"--sync", "always", "--max-batch", "1000"}, true},
		{[]string{"--sync=interval", "--sync-interval", "5ms"}, true},
		{[]string{"--log-level", "addr"}, true}, // a value, not a flag
		{[]string{"--addr", ":7000"}, false},
		{[]string{"-addr=:7000"}, false},
		{[]string{"--sync", "never", "--data-dir", "/srv/comb"}, false},
		{[]string{"--data-dir=/srv/comb"}, false},
	}
	for _, tc := range cases {
		err := CheckServeArgs(tc.args)
		if tc.ok {
			assert.NoError(t, err, "%q", tc.args)
		} else {
			assert.ErrorIs(t, err, ErrConfig, "%q", tc.args)
		}
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	tb := &tailBuffer{max: 8}
	assert.Equal(t, "(no output)", tb.String())
	_, _ = tb.Write([]byte("0123"))
	_, _ = tb.Write([]byte("456789ab\n"))
	assert.Equal(t, "56789ab", tb.String(), "the last 8 bytes (\"56789ab\\n\"), trimmed")
}

// A binary that exits before it answers /health: the error quotes its output and exit status,
// the start is retried on fresh ports, and no data directory is left behind.
func TestStartServerReportsAServerThatExits(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-comb")
	count := filepath.Join(dir, "starts")
	script := "#!/bin/sh\necho start >> " + count + "\necho \"comb serve: --sync must be always, interval or never\" >&2\nexit 2\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	root := t.TempDir()

	_, err := StartServer(context.Background(), bin, []string{"--sync", "sometimes"}, root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before it was ready (exit status 2)")
	assert.Contains(t, err.Error(), "--sync must be always, interval or never")
	starts, rerr := os.ReadFile(count)
	require.NoError(t, rerr)
	assert.Equal(t, serverStartAttempts, strings.Count(string(starts), "start"))
	left, rerr := os.ReadDir(root)
	require.NoError(t, rerr)
	assert.Empty(t, left, "every fresh data directory removed")
}

func TestStartServerRefusesReservedFlags(t *testing.T) {
	_, err := StartServer(context.Background(), "/bin/true", []string{"--addr", ":1"}, t.TempDir())
	require.ErrorIs(t, err, ErrConfig)
}

func TestBinaryCompareCheck(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "comb")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o644))
	ok := BinaryCompare{Baseline: exe, Candidate: exe, DataRoot: dir, Rounds: 1, Serve: []string{"--sync", "always"}}
	require.NoError(t, ok.Check())

	bad := map[string]func(c *BinaryCompare){
		"no rounds":               func(c *BinaryCompare) { c.Rounds = 0 },
		"no baseline":             func(c *BinaryCompare) { c.Baseline = "" },
		"missing candidate":       func(c *BinaryCompare) { c.Candidate = filepath.Join(dir, "absent") },
		"candidate not a program": func(c *BinaryCompare) { c.Candidate = plain },
		"baseline a directory":    func(c *BinaryCompare) { c.Baseline = dir },
		"data root not a dir":     func(c *BinaryCompare) { c.DataRoot = plain },
		"serve sets the address":  func(c *BinaryCompare) { c.Serve = []string{"--addr=:1"} },
		"a cluster of 4":          func(c *BinaryCompare) { c.Cluster, c.Config.Workload = 4, WorkloadPush },
		"a cluster that consumes": func(c *BinaryCompare) { c.Cluster, c.Config.Workload = 3, WorkloadConsume },
		"serve names the node": func(c *BinaryCompare) {
			c.Cluster, c.Config.Workload, c.Serve = 3, WorkloadPush, []string{"--node-id", "x"}
		},
		"serve turns TLS off": func(c *BinaryCompare) {
			c.Cluster, c.Config.Workload, c.Serve = 3, WorkloadPush, []string{"--peer-insecure"}
		},
	}
	clustered := ok
	clustered.Cluster, clustered.Config.Workload = 3, WorkloadPush
	require.NoError(t, clustered.Check())
	for name, mutate := range bad {
		c := ok
		mutate(&c)
		assert.ErrorIs(t, c.Check(), ErrConfig, name)
	}
}

func TestOnTmpfs(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err == nil {
		assert.True(t, OnTmpfs("/dev/shm"), "/dev/shm is a tmpfs on Linux")
	}
	assert.False(t, OnTmpfs("/proc/self"), "procfs is not a tmpfs")
	assert.False(t, OnTmpfs(filepath.Join(t.TempDir(), "absent")), "an unreadable path is not reported as tmpfs")
}
