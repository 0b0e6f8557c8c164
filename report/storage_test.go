package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// Storage reports the data directory's files, the file system's room, the commit log's
// retained bytes and the flush pass's figures.
func TestStorageReportsDataDiskCommitLogAndFlush(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Sync: "always", FlushInterval: time.Hour, Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	rs := New(b.View())
	_, err = b.Push([]broker.PushItem{{Queue: "q", Partition: "p", TransactionID: "t1", Payload: []byte(`{"n":1}`)}})
	require.NoError(t, err)

	s := rs.Storage()
	require.Equal(t, dir, s.DataDir)
	require.Empty(t, s.DataErr)
	require.Empty(t, s.DiskErr)
	require.Positive(t, s.DataFiles)
	require.GreaterOrEqual(t, s.DataBytes, s.SegmentBytes)
	require.Positive(t, s.SegmentBytes, "the pushed message is in a segment")
	require.Positive(t, s.CommitLogBytes, "no pass has truncated the commit log yet")
	require.Positive(t, s.DiskTotalBytes)
	require.LessOrEqual(t, s.DiskFreeBytes, s.DiskTotalBytes)
	require.Equal(t, b.View().FlushStatus().Passes, s.FlushPasses, "the flush figures are the View's (broker's TestViewFlushStatus)")
	require.Equal(t, s.SyncLatency.Count, rs.Stats().SyncLatency.Count)
}

// dirBytes counts regular files only, whatever the nesting.
func TestDirBytesSumsRegularFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), make([]byte, 10), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "b", "y"), make([]byte, 32), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "x"), filepath.Join(dir, "a", "link")))
	n, files, errText := dirBytes(dir)
	require.Equal(t, int64(42), n)
	require.Equal(t, int64(2), files)
	require.Empty(t, errText)
	_, _, errText = dirBytes(filepath.Join(dir, "missing"))
	require.Contains(t, errText, "missing")
}

// The data directory's size is walked again only once DataWalkMaxAge has
// passed: a file written in between shows from the next walk on.
func TestDataWalkIsReusedUntilMaxAge(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10), 0o644))
	took := time.Duration(0)
	w := dataWalk{elapsed: func(time.Time) time.Duration { return took }}
	t0 := time.Unix(1_000_000, 0)
	n, files, _ := w.get(dir, t0)
	require.Equal(t, [2]int64{10, 1}, [2]int64{n, files})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), make([]byte, 5), 0o644))
	n, files, _ = w.get(dir, t0.Add(DataWalkMaxAge-time.Millisecond))
	require.Equal(t, [2]int64{10, 1}, [2]int64{n, files}, "within the max age: the cached walk")
	n, files, _ = w.get(dir, t0.Add(-time.Second))
	require.Equal(t, [2]int64{15, 2}, [2]int64{n, files}, "a clock set back walks again")
	t1 := t0.Add(-time.Second)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c"), make([]byte, 1), 0o644))
	n, files, _ = w.get(dir, t1.Add(DataWalkMaxAge))
	require.Equal(t, [2]int64{16, 3}, [2]int64{n, files}, "at the max age: walked again")
	other := t.TempDir()
	n, files, _ = w.get(other, t1.Add(DataWalkMaxAge))
	require.Equal(t, [2]int64{0, 0}, [2]int64{n, files}, "another directory: its own walk")

	// A walk that took 1 s is reused for 50 s.
	took = time.Second
	t2 := t1.Add(time.Hour)
	n, _, _ = w.get(dir, t2)
	require.Equal(t, int64(16), n)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d"), make([]byte, 1), 0o644))
	n, _, _ = w.get(dir, t2.Add(dataWalkCostFactor*time.Second-time.Millisecond))
	require.Equal(t, int64(16), n, "a slow walk is reused for dataWalkCostFactor times its duration")
	n, _, _ = w.get(dir, t2.Add(dataWalkCostFactor*time.Second))
	require.Equal(t, int64(17), n)
}

// BenchmarkDirBytes walks a data directory shaped like 1,000 partitions of
// five files each: the cost DataWalkMaxAge bounds per scrape.
func BenchmarkDirBytes(b *testing.B) {
	dir := b.TempDir()
	for p := range 1000 {
		pd := filepath.Join(dir, "queues", "q", fmt.Sprint("p", p))
		require.NoError(b, os.MkdirAll(pd, 0o755))
		for _, f := range []string{"DESCRIPTOR", "0000.seg", "0000.idx", "dedup.idx", "dedup-1-6144.run"} {
			require.NoError(b, os.WriteFile(filepath.Join(pd, f), make([]byte, 64), 0o644))
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, files, _ := dirBytes(dir); files != 5000 {
			b.Fatalf("%d files", files)
		}
	}
}
