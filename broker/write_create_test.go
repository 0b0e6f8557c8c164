package broker

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

// Requests that create partitions while a creation holds metaMu join one
// batch: one metadata entry (one group commit) for all of them, where each
// used to append and wait for its own, one after the other.
func TestConcurrentCreationsShareOneMetadataEntry(t *testing.T) {
	b, err := Open(Config{DataDir: t.TempDir(), Sync: "always", Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "first", TransactionID: "x", Payload: []byte("1")}})
	require.NoError(t, err)
	from := b.wal.DurableLSN() + 1

	const n = 20
	b.metaMu.Lock() // a creation in progress: the n requests queue behind it
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.ensurePartitions([]partKey{{"q", fmt.Sprintf("p%d", i)}, {"q", "shared"}})
		}()
	}
	require.Eventually(t, func() bool {
		b.createMu.Lock()
		defer b.createMu.Unlock()
		return b.creating != nil && len(b.creating.keys) == 2*n
	}, 10*time.Second, time.Millisecond, "every request joined the batch")
	b.metaMu.Unlock()
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	metaEntries, creates := 0, 0
	require.NoError(t, b.wal.Read(from, func(_ uint64, kind byte, payload []byte) error {
		if kind != walMeta {
			return nil
		}
		metaEntries++
		recs, err := decodeMetaEntry(payload)
		require.NoError(t, err)
		for _, r := range recs {
			if r.Kind == meta.KindPartitionCreate {
				creates++
			}
		}
		return nil
	}))
	assert.Equal(t, 1, metaEntries)
	assert.Equal(t, n+1, creates, "p0..p19 and shared, once")
	q := b.queues["q"]
	for i := range n {
		assert.NotNil(t, q.partition(fmt.Sprintf("p%d", i)))
	}
}

// A flush pass makes many new partition directories durable with one
// syncfs, not an fsync of each DESCRIPTOR and directory; a crash after it
// keeps every directory and DESCRIPTOR.
func TestFlushPassSyncsManyNewDirectoriesWithOneSyncFS(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	fy := vfs.NewFaulty(mem)
	b, err := Open(Config{DataDir: "/data", FS: fy, Sync: "always", Logger: zerolog.Nop(),
		CheckpointInterval: time.Hour, MaintenanceInterval: -1, FlushInterval: time.Hour})
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
	// Faulty records SyncFS as a syncdir of the directory it names: the
	// segment committer's names its first log's directory, the new
	// directories' names the data directory.
	syncFS, partitionDirSyncs := 0, 0
	for _, c := range fy.Trace() {
		switch {
		case c.Op == vfs.OpSyncDir && c.Path == "/data":
			syncFS++
		case c.Op == vfs.OpSyncDir && strings.HasPrefix(c.Path, partitions+"/"):
			partitionDirSyncs++
		}
		assert.False(t, c.Op == vfs.OpSync && strings.HasSuffix(c.Path, meta.DescriptorFile), "no fsync of a DESCRIPTOR: %s", c.Path)
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
