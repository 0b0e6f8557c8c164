package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/dump"
	"github.com/combmq/comb/fsck"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
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
	e.crash() // the creations only in the commit log
	e = openSmallEnv(t, dir, true)
	require.Empty(t, partitionDirs(t, dir), "start-up makes none either")
	require.ElementsMatch(t, want, popSmall(e, "q", "g1b"))

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

func openSmallEnvBytes(t *testing.T, dir string, limit int64) *env {
	t.Helper()
	e := &env{t: t, dir: dir, clk: newTestClock()}
	b, err := Open(Config{DataDir: dir, Sync: "always", Now: e.clk.Now, Logger: zerolog.Nop(), WakeTick: time.Millisecond,
		SmallPartitions: true, SmallPartitionBytes: limit})
	require.NoError(t, err)
	e.b = b
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return e
}

func txs(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, from+i)
	}
	return out
}

// A small partition past the threshold gets its own directory at the next
// flush pass (and in the push path past twice the threshold): its records
// move there byte for byte, the entry log's copies are dropped, and it
// serves and recovers as any partition.
func TestSmallPartitionMaterializes(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnvBytes(t, dir, 512)
	e.push("q", "big", txs("b", 0, 20)...)
	e.push("q", "tiny", "t-0")
	require.Empty(t, partitionDirs(t, dir))
	require.NoError(t, e.b.flushPass())
	big := e.b.lookupQueue("q").partition("big")
	require.Equal(t, []string{big.idStr}, partitionDirs(t, dir))
	require.Nil(t, e.b.elog.Extents(big.id))
	require.Len(t, e.b.elog.Partitions(), 1, "tiny stays small")
	names, err := os.ReadDir(filepath.Join(dir, layout.Partitions, big.idStr))
	require.NoError(t, err)
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	require.Equal(t, []string{"00000000000000000001.seg", "DESCRIPTOR"}, got)

	e.push("q", "big", txs("b", 20, 5)...)
	want := append(txs("b", 0, 25), "t-0")
	require.ElementsMatch(t, want, popSmall(e, "q", "g1"))

	// Past twice the threshold a push moves it itself, before any pass.
	n := 0
	for ; n < 50; n++ {
		e.push("q", "fast", txs("f", 30*n, 30)...)
		fast := e.b.lookupQueue("q").partition("fast")
		if !e.b.small.IsVirtual(fast.log.Dir()) {
			break
		}
		require.Less(t, e.b.small.Bytes(fast.log.Dir()), 4*e.b.smallLimit())
	}
	require.Less(t, n, 50, "moved by a push")
	want = append(want, txs("f", 0, 30*(n+1))...)

	e.crash()
	e = openSmallEnvBytes(t, dir, 512)
	require.ElementsMatch(t, want, popSmall(e, "q", "g2"))
	require.Len(t, partitionDirs(t, dir), 2)

	// Moved after a restart (its in-memory DESCRIPTOR gone with the
	// process): the directory still gets one, from the registry.
	e.push("q", "tiny", txs("t", 1, 40)...)
	require.NoError(t, e.b.flushPass())
	tiny := e.b.lookupQueue("q").partition("tiny")
	d, err := meta.ReadDescriptor(vfs.OS, filepath.Join(dir, layout.Partitions, tiny.idStr))
	require.NoError(t, err)
	require.Equal(t, "tiny", d.Partition)
}

// A move into a directory that a crash interrupted before the segment file
// was renamed in (a directory holding a DESCRIPTOR only) is undone at
// start-up: the records are served from the entry log.
func TestSmallInterruptedMaterialization(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnv(t, dir, true)
	e.push("q", "p", "p-0", "p-1")
	require.NoError(t, e.b.flushPass())
	p := e.b.lookupQueue("q").partition("p")
	pdir := filepath.Join(dir, layout.Partitions, p.idStr)
	require.NoError(t, os.Mkdir(pdir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pdir, "DESCRIPTOR"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pdir, "00000000000000000001.seg.small-tmp"), []byte("partial"), 0o644))
	e.crash()
	e = openSmallEnv(t, dir, true)
	require.Empty(t, partitionDirs(t, dir))
	require.ElementsMatch(t, []string{"p-0", "p-1"}, popSmall(e, "q", "g"))
}

// comb dump and comb fsck read small partitions: dump prints every record
// (the shared file's, then the commit log's), fsck finds nothing to report,
// after a crash.
func TestSmallPartitionsOffline(t *testing.T) {
	dir := t.TempDir()
	e := openSmallEnv(t, dir, true)
	e.push("q", "a", "a-0", "a-1")
	e.push("q", "b", "b-0")
	require.NoError(t, e.b.flushPass())
	e.push("q", "a", "a-2") // in the commit log only
	e.crash()

	var out bytes.Buffer
	st, err := dump.Run(dir, dump.Options{Records: true}, &out)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Partitions)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct{ Type, TransactionID string }
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r.Type == "record" {
			got = append(got, r.TransactionID)
		}
	}
	require.ElementsMatch(t, []string{"a-0", "a-1", "a-2", "b-0"}, got)

	rep, err := fsck.Run(dir, fsck.Options{Mode: fsck.ModeCheck})
	require.NoError(t, err)
	for _, f := range rep.Findings {
		require.Equal(t, fsck.SeverityInfo, f.Severity, "%s: %s", f.Kind, f.Detail)
	}
}
