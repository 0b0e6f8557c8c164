package report

import (
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
