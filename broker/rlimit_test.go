package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestLowFileLimit runs a broker in a child process whose RLIMIT_NOFILE is
// 256 (as under `ulimit -n 256`), with the default MaxOpenFiles (512, which
// Open lowers to half the limit), and pushes to and pops from 2,000
// partitions: the server must never fail with EMFILE (issue 7).
func TestLowFileLimit(t *testing.T) {
	if os.Getenv("COMB_LOW_RLIMIT_CHILD") == "1" {
		lowFileLimitChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLowFileLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "COMB_LOW_RLIMIT_CHILD=1", "COMB_LOW_RLIMIT_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	assert.Contains(t, string(out), "PASS")
}

func lowFileLimitChild(t *testing.T) {
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 256, Max: 256}))
	b, err := Open(Config{DataDir: os.Getenv("COMB_LOW_RLIMIT_DIR"), Sync: "interval", Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer b.Close()
	const parts = 2000
	for r := range parts / 100 {
		items := make([]PushItem, 100)
		for i := range items {
			items[i] = PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", r*100+i), TransactionID: fmt.Sprint(r*100 + i), Payload: []byte("1")}
		}
		res, err := b.Push(items)
		require.NoError(t, err)
		for _, x := range res {
			require.Equal(t, PushQueued, x.Status, x.Error)
		}
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for len(seen) < parts && time.Now().Before(deadline) {
		res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 100, Partitions: 100, AutoAck: true})
		require.NoError(t, err)
		for _, m := range res.Messages {
			seen[m.Partition] = true
		}
		res.Release()
	}
	require.Len(t, seen, parts)
	st := b.View().Counters()
	require.LessOrEqual(t, st.MaxOpenFiles, 128)
	require.LessOrEqual(t, st.OpenFiles, st.MaxOpenFiles)
	// Dedup after the handles were recycled reopens files too.
	res, err := b.Push([]PushItem{{Queue: "q", Partition: "p7", TransactionID: "7"}})
	require.NoError(t, err)
	require.Equal(t, PushDuplicate, res[0].Status)
}
