package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// syncFSFlushConfig is a broker on fsys whose flush passes run only when the
// test calls them.
func syncFSFlushConfig(fsys vfs.FS, syncFS bool) Config {
	return Config{DataDir: "/data", FS: fsys, Sync: "always", Logger: zerolog.Nop(), FlushSyncFS: syncFS,
		CheckpointInterval: time.Hour, MaintenanceInterval: -1, FlushInterval: time.Hour}
}

// pushRound pushes n messages to each of the partitions p<from>..p<to-1>
// of queue q and returns their transactionIds, every one answered queued.
func pushRound(t *testing.T, b *Broker, round, from, to, n int) []string {
	t.Helper()
	var items []PushItem
	for i := from; i < to; i++ {
		for j := range n {
			id := fmt.Sprintf("r%d-p%d-%d", round, i, j)
			items = append(items, PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", i), TransactionID: id, Payload: []byte(`"` + id + `"`)})
		}
	}
	res, err := b.Push(items)
	require.NoError(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		require.Equal(t, PushQueued, r.Status, r.TransactionID)
		ids[i] = r.TransactionID
	}
	return ids
}

// drainPartitions pops (autoAck) everything of queue q's partitions
// p0..p<n-1> and returns the transactionIds, sorted.
func drainPartitions(t *testing.T, b *Broker, n int) []string {
	t.Helper()
	var got []string
	for i := range n {
		for {
			res, err := b.Pop(t.Context(), PopRequest{Queue: "q", Partition: fmt.Sprintf("p%d", i), Group: "check", Batch: 1000, AutoAck: true})
			if errors.Is(err, ErrNotFound) {
				break
			}
			require.NoError(t, err)
			for _, m := range res.Messages {
				got = append(got, m.TransactionID)
			}
			empty := len(res.Messages) == 0
			res.Release()
			if empty {
				break
			}
		}
	}
	sort.Strings(got)
	return got
}

// Issue 21 item 2: on a file system whose syncfs syncs nothing (FUSE without
// sync_fs), flush passes over 30 and then 36 new partitions make every file
// durable by its own descriptor before they cut the commit log, so a power
// cut after them keeps every acknowledged message. Before, a pass over 8 or
// more dirty logs trusted one syncfs and cut the log: every message gone.
func TestFlushPassKeepsEveryMessageWhenSyncFSSyncsNothing(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	mem.SetSyncFSNoop(true)
	fy := errorfs.New(mem)
	b, err := Open(syncFSFlushConfig(fy, false))
	require.NoError(t, err)
	defer b.Close()

	acked := pushRound(t, b, 1, 0, 30, 3)
	pushed := b.wal.DurableLSN()
	fy.Record()
	require.NoError(t, b.flushPass())
	require.Greater(t, b.wal.FirstLSN(), pushed, "the pass cut the commit log behind the pushes")
	fdatasyncs := map[string]int{}
	for _, c := range fy.Trace() {
		if c.Op == errorfs.OpSync {
			fdatasyncs[c.Path]++
		}
	}
	for _, p := range b.queues["q"].partitionsSnapshot() {
		dir := filepath.Join("/data", meta.PartitionsDir, p.idStr)
		names, err := mem.List(dir)
		require.NoError(t, err)
		segs := 0
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				segs++
				assert.Equal(t, 1, fdatasyncs[filepath.Join(dir, n)], "%s/%s synced by its own descriptor", dir, n)
			}
		}
		assert.Equal(t, 1, segs, dir)
	}

	acked = append(acked, pushRound(t, b, 2, 0, 36, 2)...) // 6 more new partitions
	require.NoError(t, b.flushPass())
	acked = append(acked, pushRound(t, b, 3, 24, 40, 1)...) // durable in the commit log only
	crashed := mem.Crash(false)

	b2, err := Open(syncFSFlushConfig(crashed, false))
	require.NoError(t, err)
	defer b2.Close()
	sort.Strings(acked)
	require.Len(t, acked, 30*3+36*2+16)
	assert.Equal(t, acked, drainPartitions(t, b2, 40), "every acknowledged message, once")
}

// With FlushSyncFS on a file system that implements syncfs, one syncfs
// makes many new directories durable, with no fsync of each DESCRIPTOR and
// directory; a crash after it keeps every directory and DESCRIPTOR.
func TestFlushPassSyncsManyNewDirectoriesWithOneSyncFS(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	mem.SetFSType(vfs.MagicExt4)
	fy := errorfs.New(mem)
	b, err := Open(syncFSFlushConfig(fy, true))
	require.NoError(t, err)
	defer b.Close()
	items := make([]PushItem, 2*dirsSyncFSMin)
	for i := range items {
		items[i] = PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", i), TransactionID: fmt.Sprint(i), Payload: []byte("1")}
	}
	_, err = b.Push(items)
	require.NoError(t, err)

	fy.Record()
	require.NoError(t, b.flushPass())
	partitions := filepath.Join("/data", meta.PartitionsDir)
	// errorfs.FS records SyncFS as a syncdir of the directory it names: the
	// segment committer's names its first log's directory, the new
	// directories' names the data directory.
	syncFS, partitionDirSyncs := 0, 0
	for _, c := range fy.Trace() {
		switch {
		case c.Op == errorfs.OpSyncDir && c.Path == "/data":
			syncFS++
		case c.Op == errorfs.OpSyncDir && strings.HasPrefix(c.Path, partitions+"/"):
			partitionDirSyncs++
		}
		assert.False(t, c.Op == errorfs.OpSync && strings.HasSuffix(c.Path, meta.DescriptorFile), "no fsync of a DESCRIPTOR: %s", c.Path)
	}
	assert.Equal(t, 1, syncFS, "one syncfs for the new directories")
	assert.Equal(t, 1, partitionDirSyncs, "one syncfs for the logs, no fsync per directory")

	crashed := mem.Crash(false)
	for _, p := range b.queues["q"].partitionsSnapshot() {
		dir := filepath.Join(partitions, p.idStr)
		_, err := meta.ReadDescriptor(crashed, dir)
		assert.NoError(t, err, dir)
	}
}

// FlushSyncFS is refused, naming the file system, unless it is ext4, xfs or
// btrfs; nothing is written to the data directory then.
func TestOpenRefusesFlushSyncFSOnAnUntrustedFileSystem(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	mem.SetFSType(vfs.MagicFUSE)
	_, err := Open(syncFSFlushConfig(mem, true))
	require.ErrorIs(t, err, ErrNotDurable)
	require.ErrorIs(t, err, vfs.ErrSyncFSUntrusted)
	assert.Contains(t, err.Error(), "/data is on fuse, not ext4, xfs or btrfs")
	names, err := mem.List("/data")
	require.NoError(t, err)
	assert.Empty(t, names)

	mem.SetFSType(vfs.MagicXFS)
	b, err := Open(syncFSFlushConfig(mem, true))
	require.NoError(t, err)
	require.NoError(t, b.Close())
}

// A file system that answers fsync with "not supported" cannot keep any
// promise: Open refuses, with the reason, before it writes anything.
func TestOpenRefusesAFileSystemWithoutFsync(t *testing.T) {
	for _, errno := range []error{unix.EINVAL, unix.EOPNOTSUPP} {
		mem := vfs.NewStrictMem("/data")
		fy := errorfs.New(mem)
		fy.Inject(errorfs.Fault{Op: errorfs.OpSync, Err: errno})
		_, err := Open(syncFSFlushConfig(fy, false))
		require.ErrorIs(t, err, ErrNotDurable, errno)
		require.ErrorIs(t, err, vfs.ErrSyncUnsupported)
		require.ErrorIs(t, err, errno)
		assert.Contains(t, err.Error(), "fdatasync /data/SYNC-PROBE: the file system does not support fsync")
		names, err := mem.List("/data")
		require.NoError(t, err)
		assert.Empty(t, names, "the probe file is removed and nothing else written")

		fy.Clear()
		b, err := Open(syncFSFlushConfig(fy, false))
		require.NoError(t, err, "the same directory once fsync works")
		require.NoError(t, b.Close())
	}
}
