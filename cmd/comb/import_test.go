package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport/pgtest"
)

// combCmd is the test binary acting as comb (TestMain, COMB_TEST_AS_COMB).
func combCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "COMB_TEST_AS_COMB=1")
	return cmd
}

func runComb(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := combCmd(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

// Issue 24: `comb import` refuses a held data directory; killed with SIGKILL in the middle of
// an import, the same command run again finishes it; --verify then exits 0, and 1 once comb's
// side differs.
func TestImportFromQueenKilledAndResumed(t *testing.T) {
	pg := pgtest.Start(t)
	const n, parts, batch = 20_000, 4, 1000
	for i := 0; i < n; i += batch {
		items := make([]map[string]any, 0, batch)
		for j := i; j < i+batch; j++ {
			items = append(items, map[string]any{"queue": "big", "partition": fmt.Sprintf("p%d", (i/batch)%parts),
				"transactionId": fmt.Sprintf("t%06d", j), "payload": map[string]any{"n": j}})
		}
		pg.Push(items)
	}
	dir := t.TempDir()

	held, err := broker.Open(broker.Config{DataDir: dir})
	require.NoError(t, err)
	code, _, stderr := runComb(t, "import", "--from-queen", pg.URL, "--data-dir", dir)
	require.NoError(t, held.Close())
	assert.Equal(t, importFailed, code)
	assert.Contains(t, stderr, "held by a running server")

	// Killed once the first partition is done, while the next is being copied.
	cmd := combCmd("import", "--from-queen", pg.URL, "--data-dir", dir)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	rd := bufio.NewReader(pipe)
	var line string
	for !strings.Contains(line, "partition p0:") { // progress lines may come first
		line, err = rd.ReadString('\n')
		require.NoError(t, err)
	}
	require.Contains(t, line, "partition p0: 5000 messages")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	t.Logf("killed after: %s", strings.TrimSpace(line))
	b, err := broker.Open(broker.Config{DataDir: dir})
	require.NoError(t, err)
	stored := 0
	for p := range parts {
		if err := b.ScanPartition("big", fmt.Sprintf("p%d", p), func(uint64, [16]byte, string, []byte, int64) error { stored++; return nil }); err != nil {
			t.Logf("partition p%d after the kill: %v", p, err)
		}
	}
	require.NoError(t, b.Close())
	t.Logf("messages stored when killed: %d of %d", stored, n)

	code, stdout, stderr := runComb(t, "import", "--from-queen", pg.URL, "--data-dir", dir)
	require.Equal(t, importOK, code, stderr)
	assert.Contains(t, stdout, "imported 1 queues, 4 partitions")
	code, stdout, stderr = runComb(t, "import", "--from-queen", pg.URL, "--data-dir", dir, "--verify")
	assert.Equal(t, importOK, code, stdout+stderr)

	b, err = broker.Open(broker.Config{DataDir: dir})
	require.NoError(t, err)
	var count int
	for p := range parts {
		require.NoError(t, b.ScanPartition("big", fmt.Sprintf("p%d", p), func(uint64, [16]byte, string, []byte, int64) error { count++; return nil }))
	}
	assert.Equal(t, n, count, "every message once")
	_, err = b.Push([]broker.PushItem{{Queue: "big", Partition: "p1", TransactionID: "extra", Payload: []byte(`1`)}})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	code, stdout, _ = runComb(t, "import", "--from-queen", pg.URL, "--data-dir", dir, "--verify")
	assert.Equal(t, importDiffers, code)
	assert.Contains(t, stdout, "queue big partition p1: message count: queen 5000, comb 5001")
	assert.Equal(t, 3, strings.Count(stdout, "partition p1:"), stdout)
}
