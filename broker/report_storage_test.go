package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// Storage reports the data directory's files, the file system's room, the commit log's
// retained bytes and the last flush pass: one more after each pass, with its end and error.
func TestStorageReportsDataDiskCommitLogAndFlush(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{DataDir: dir, Sync: "always", FlushInterval: time.Hour, Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "t1", Payload: []byte(`{"n":1}`)}})
	require.NoError(t, err)

	s := b.Storage()
	require.Equal(t, dir, s.DataDir)
	require.Empty(t, s.DataErr)
	require.Empty(t, s.DiskErr)
	require.Positive(t, s.DataFiles)
	require.GreaterOrEqual(t, s.DataBytes, s.SegmentBytes)
	require.Positive(t, s.SegmentBytes, "the pushed message is in a segment")
	require.Positive(t, s.CommitLogBytes, "no pass has truncated the commit log yet")
	require.Positive(t, s.DiskTotalBytes)
	require.LessOrEqual(t, s.DiskFreeBytes, s.DiskTotalBytes)
	passes := s.FlushPasses // Open may run one

	before := time.Now()
	require.NoError(t, b.flushPass())
	s = b.Storage()
	require.Equal(t, passes+1, s.FlushPasses)
	require.False(t, s.LastFlushAt.Before(before.Truncate(time.Microsecond)), "the pass ended after it started: %v < %v", s.LastFlushAt, before)
	require.GreaterOrEqual(t, s.LastFlushDuration, time.Duration(0))
	require.Empty(t, s.LastFlushErr)
	require.Equal(t, s.SyncLatency.Count, b.Stats().SyncLatency.Count)
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
