package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/layout"
)

// openSmallEnv is newEnv with small partitions on (or off) and Sync always.
func openSmallEnv(t *testing.T, dir string, small bool) *env {
	t.Helper()
	e := &env{t: t, dir: dir, clk: newTestClock()}
	b, err := Open(Config{DataDir: dir, Sync: "always", Now: e.clk.Now, Logger: zerolog.Nop(), WakeTick: time.Millisecond, SmallPartitions: small})
	require.NoError(t, err)
	e.b = b
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return e
}

func partitionDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, layout.Partitions))
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// popSmall pops every message of queue q for group g (autoAck) and returns
// their transactionIds in order per partition.
func popSmall(e *env, q, g string) []string {
	var out []string
	for {
		res := e.pop(PopRequest{Queue: q, Group: g, AutoAck: true, Batch: 1000, Partitions: 100})
		if len(res.Messages) == 0 {
			return out
		}
		out = append(out, txids(res)...)
	}
}

// New partitions make no inode: their records are served from memory, then
// from the entry log once a flush pass homed them, and come back after a
// crash and after a clean restart.
func TestSmallPartitionsMakeNoInode(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnv(t, dir, true)
	var want []string
	for i := 0; i < 3; i++ {
		part := fmt.Sprint("p", i)
		for j := 0; j < 2; j++ {
			tx := fmt.Sprintf("%s-%d", part, j)
			e.push("q", part, tx)
			want = append(want, tx)
		}
	}
	require.Empty(t, partitionDirs(t, dir), "no partition directory")
	require.ElementsMatch(t, want, popSmall(e, "q", "g1"))

	require.NoError(t, e.b.flushPass())
	st := e.b.elog.Stats()
	require.Equal(t, 3, st.Partitions)
	require.Equal(t, 6/2*2, len(want))
	e.push("q", "p0", "p0-late") // in memory and the commit log only
	want = append(want, "p0-late")
	require.ElementsMatch(t, want, popSmall(e, "q", "g2"))

	e.crash()
	e = openSmallEnv(t, dir, true)
	require.Empty(t, partitionDirs(t, dir))
	require.ElementsMatch(t, want, popSmall(e, "q", "g3"))
	res := e.push("q", "p1", "p1-0", "p1-after")
	require.Equal(t, PushDuplicate, res[0].Status, "dedup finds a homed record")
	require.Equal(t, PushQueued, res[1].Status)
	want = append(want, "p1-after")

	require.NoError(t, e.b.Close())
	e.b = nil
	e = openSmallEnv(t, dir, false) // off: the small partitions are still read
	require.ElementsMatch(t, want, popSmall(e, "q", "g4"))
	require.Empty(t, partitionDirs(t, dir))
}

// Deleting a queue drops its small partitions' records from the entry log.
func TestSmallPartitionDeleteDropsRecords(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnv(t, dir, true)
	e.push("q", "a", "a-0")
	e.push("q", "b", "b-0")
	require.NoError(t, e.b.flushPass())
	require.Len(t, e.b.elog.Partitions(), 2)
	ok, err := e.b.DeleteQueue("q")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, e.b.elog.Partitions())
	require.NoError(t, e.b.flushPass())
	e.crash()
	e = openSmallEnv(t, dir, true)
	require.Empty(t, e.b.elog.Partitions())
	require.Nil(t, e.b.lookupQueue("q"))
}

// A data directory written without small partitions starts unchanged with
// them on: its partitions keep their directories, new ones get none.
func TestSmallPartitionsBesideRealOnes(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnv(t, dir, false)
	e.push("q", "old", "old-0")
	require.Len(t, partitionDirs(t, dir), 1)
	require.NoError(t, e.b.Close())
	e.b = nil

	e = openSmallEnv(t, dir, true)
	e.push("q", "old", "old-1")
	e.push("q", "new", "new-0")
	require.Len(t, partitionDirs(t, dir), 1)
	require.ElementsMatch(t, []string{"old-0", "old-1", "new-0"}, popSmall(e, "q", "g"))
	e.crash()
	e = openSmallEnv(t, dir, true)
	require.ElementsMatch(t, []string{"old-0", "old-1", "new-0"}, popSmall(e, "q", "g2"))
}
