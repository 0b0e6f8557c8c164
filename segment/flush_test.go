package segment

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// segBytes returns every segment file of dir in m with its contents.
func segBytes(t testing.TB, m *vfs.Mem, dir string) map[string][]byte {
	t.Helper()
	names, err := m.List(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, n := range names {
		if _, ok := parseSegName(n); ok {
			out[n] = m.Bytes(dir + "/" + n)
		}
	}
	return out
}

// Issue 14: Mark and Flush make logs durable on the caller's schedule whatever the
// policy (here SyncNever, which syncs nothing else), for one log, a few and many on
// one file system, directory entries included: by default an fdatasync of each file
// through its own descriptor, so a file system whose syncfs syncs nothing loses
// nothing (issue 21); with SetSyncFS, one syncfs for many.
func TestFlushMakesMarkedLogsDurable(t *testing.T) {
	for _, tc := range []struct {
		n            int
		syncFS, noop bool
	}{{1, false, true}, {3, false, true}, {syncFSMin + 2, false, true}, {syncFSMin + 2, true, false}} {
		t.Run(fmt.Sprintf("%d logs, syncfs %v", tc.n, tc.syncFS), func(t *testing.T) {
			n := tc.n
			mem := vfs.NewStrictMem("/d")
			mem.SetSyncFSNoop(tc.noop)
			fs := errorfs.New(mem)
			c := NewCommitter()
			c.SetSyncFS(tc.syncFS)
			logs := make([]*Log, n)
			for i := range logs {
				var err error
				logs[i], _, err = openLog(fs, fmt.Sprintf("/d/p%d", i), Options{DeferRotationSync: true, MaxFileBytes: 400})
				require.NoError(t, err)
				for b := 0; b < 5; b++ {
					_, err := logs[i].Append(int64(b), recs(10*b, 2, 60))
					require.NoError(t, err)
				}
				c.Mark(logs[i])
				assert.True(t, logs[i].Dirty())
			}
			for i := range logs {
				assert.Empty(t, segBytes(t, mem.Crash(false), fmt.Sprintf("/d/p%d", i)), "nothing durable before Flush")
			}
			fs.Record()
			require.NoError(t, c.Flush())
			dirSyncs, fdatasyncs := map[string]int{}, map[string]int{}
			for _, call := range fs.Trace() {
				switch call.Op {
				case errorfs.OpSyncDir: // SyncDir or SyncFS
					dirSyncs[call.Path]++
				case errorfs.OpSync:
					fdatasyncs[call.Path]++
				}
			}
			if tc.syncFS {
				assert.Len(t, dirSyncs, 1, "one syncfs for the pass")
				assert.Empty(t, fdatasyncs)
			} else {
				for i := range logs {
					assert.Equal(t, 1, dirSyncs[fmt.Sprintf("/d/p%d", i)], "one fsync of each log's directory, no syncfs")
				}
				assert.Len(t, dirSyncs, n)
				for i := range logs {
					for name := range segBytes(t, mem, fmt.Sprintf("/d/p%d", i)) {
						assert.Equal(t, 1, fdatasyncs[fmt.Sprintf("/d/p%d/%s", i, name)], "one fdatasync of its own: %s", name)
					}
				}
			}
			crashed := mem.Crash(false)
			for i, l := range logs {
				dir := fmt.Sprintf("/d/p%d", i)
				assert.False(t, l.Dirty())
				want := segBytes(t, mem, dir)
				assert.Greater(t, len(want), 1, "the log rotated")
				assert.Equal(t, want, segBytes(t, crashed, dir), "every file and its name are durable")
				assert.Empty(t, l.pending, "the sealed files' handles are closed")
			}
			require.NoError(t, c.Flush(), "nothing marked: nothing to do")
			require.NoError(t, c.Close())
			assert.ErrorIs(t, c.Flush(), ErrClosed)
			for _, l := range logs {
				require.NoError(t, l.Close())
			}
		})
	}
}

// Issue 14, docs/format.md section 6: with DeferRotationSync a rotation makes no sync
// call, so a crash can lose the sealed file's tail behind a newer file; without it the
// old file and the directory are synced before the new file exists.
func TestDeferRotationSync(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("deferred=%v", deferred), func(t *testing.T) {
			mem := vfs.NewStrictMem("/")
			fs := errorfs.New(mem)
			l, _, err := openLog(fs, "/p", Options{DeferRotationSync: deferred, MaxFileBytes: 300})
			require.NoError(t, err)
			_, err = l.Append(1, recs(0, 3, 60))
			require.NoError(t, err)
			fs.Record()
			_, err = l.Append(2, recs(3, 3, 60)) // rotates: the first file is full
			require.NoError(t, err)
			require.Len(t, l.files, 2)
			var syncs []string
			for _, c := range fs.Trace() {
				if c.Op == errorfs.OpSync || c.Op == errorfs.OpSyncDir {
					syncs = append(syncs, string(c.Op)+" "+c.Path)
				}
			}
			crashed := mem.Crash(false)
			if deferred {
				assert.Empty(t, syncs, "the rotation syncs nothing")
				assert.Len(t, l.pending, 1, "the sealed file waits for a sync")
				assert.Empty(t, segBytes(t, crashed, "/p"), "nothing durable")
			} else {
				assert.Equal(t, []string{"sync /p/" + segName(1), "syncdir /p"}, syncs)
				assert.Len(t, crashed.Bytes("/p/"+segName(1)), int(l.files[0].size), "the sealed file is durable")
			}
			require.NoError(t, l.Sync())
			assert.Empty(t, l.pending)
			assert.Equal(t, segBytes(t, mem, "/p"), segBytes(t, mem.Crash(false), "/p"), "Sync covers the sealed file and the new name")
			require.NoError(t, l.Close())
		})
	}
}

// A log that rotates maxDeferredFiles times without a sync syncs its sealed files
// itself at the next rotation: the handles it keeps open stay bounded.
func TestDeferredFilesAreBounded(t *testing.T) {
	mem := vfs.NewStrictMem("/")
	l, _, err := openLog(mem, "/p", Options{DeferRotationSync: true, MaxFileBytes: 100})
	require.NoError(t, err)
	for i := 0; i <= maxDeferredFiles; i++ {
		_, err := l.Append(int64(i), recs(i, 1, 120)) // one segment fills a file
		require.NoError(t, err)
	}
	assert.Len(t, l.pending, maxDeferredFiles)
	assert.Empty(t, segBytes(t, mem.Crash(false), "/p"))
	_, err = l.Append(100, recs(100, 1, 120))
	require.NoError(t, err)
	assert.Len(t, l.pending, 1, "the rotation synced the sealed files and keeps only the one it sealed")
	crashed := mem.Crash(false)
	for i := 0; i < maxDeferredFiles; i++ {
		name := segName(l.files[i].base)
		assert.Equal(t, mem.Bytes("/p/"+name), crashed.Bytes("/p/"+name), name)
	}
	require.NoError(t, l.Close())
	assert.Empty(t, l.pending)
}

// Flush returns the failures, joined, and leaves the failed logs marked: their sticky
// failure fails every later Flush until the caller closes them. The other logs are
// durable.
func TestFlushLeavesFailedLogsMarked(t *testing.T) {
	for _, tc := range []struct {
		n      int
		syncFS bool
	}{{2, false}, {syncFSMin + 1, false}, {syncFSMin + 1, true}} {
		t.Run(fmt.Sprintf("%d logs, syncfs %v", tc.n, tc.syncFS), func(t *testing.T) {
			n := tc.n
			mem := vfs.NewStrictMem("/d")
			fs := errorfs.New(mem)
			c := NewCommitter()
			c.SetSyncFS(tc.syncFS)
			defer c.Close()
			logs := make([]*Log, n)
			for i := range logs {
				var err error
				logs[i], _, err = openLog(fs, fmt.Sprintf("/d/p%d", i), Options{})
				require.NoError(t, err)
				_, err = logs[i].Append(1, recs(i, 2, 20))
				require.NoError(t, err)
				c.Mark(logs[i])
			}
			syncFS := tc.syncFS
			fault := errorfs.Fault{Op: errorfs.OpSync, Path: "/d/p0/" + segName(1)}
			if syncFS {
				fault = errorfs.Fault{Op: errorfs.OpSyncDir, Count: 1} // the one syncfs of the pass: every log fails
			}
			remove := fs.Inject(fault)
			err := c.Flush()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrSyncFailed)
			remove()
			failed := logs[:1]
			if syncFS {
				failed = logs
			} else {
				for _, l := range logs[1:] {
					assert.False(t, l.marked.Load())
					name := l.dir + "/" + segName(1)
					assert.Equal(t, mem.Bytes(name), mem.Crash(false).Bytes(name), "the other logs are durable")
					require.NoError(t, l.Close())
				}
			}
			for _, l := range failed {
				assert.True(t, l.marked.Load(), "a failed log stays marked")
			}
			assert.ErrorIs(t, c.Flush(), ErrSyncFailed, "sticky: a later fdatasync proves nothing")
			for _, l := range failed {
				assert.ErrorIs(t, l.Close(), ErrSyncFailed)
			}
			require.NoError(t, c.Flush(), "a closed log is dropped")
			for _, l := range logs {
				assert.False(t, l.marked.Load())
			}
		})
	}
}

// Mark is safe while Flushes run: every append marked before a Flush started is durable
// when it returns, and appends marked during it are left for the next one.
func TestMarkDuringFlush(t *testing.T) {
	mem := vfs.NewStrictMem("/d")
	c := NewCommitter()
	defer c.Close()
	const writers, batches = 4, 40
	logs := make([]*Log, writers)
	for i := range logs {
		var err error
		logs[i], _, err = openLog(mem, fmt.Sprintf("/d/p%d", i), Options{DeferRotationSync: true, MaxFileBytes: 500})
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.Flush(); err != nil {
				flushed <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				if _, err := l.Append(int64(b), recs(100*i+b, 2, 40)); err != nil {
					t.Error(err)
					return
				}
				c.Mark(l)
			}
		}()
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-flushed)
	require.NoError(t, c.Flush())
	crashed := mem.Crash(false)
	for i, l := range logs {
		dir := fmt.Sprintf("/d/p%d", i)
		assert.Equal(t, segBytes(t, mem, dir), segBytes(t, crashed, dir))
		assert.Equal(t, uint64(2*batches+1), l.NextOffset())
		require.NoError(t, l.Close())
	}
}

// TestPassWorkersScaleWithThePass: a small pass syncs one log at a time, a
// large one keeps syncWorkers fdatasyncs in flight; a pass that yields
// (SetYield) keeps one in flight up to 512 logs.
func TestPassWorkersScaleWithThePass(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 0}, {1, 1}, {24, 1}, {32, 1}, {33, 2}, {100, 4}, {512, 16}, {10000, 16}} {
		require.Equal(t, c.want, passWorkers(syncWorkers, c.n, logsPerWorker), "%d logs", c.n)
	}
	for _, c := range []struct{ n, want int }{{1, 1}, {200, 1}, {512, 1}, {513, 2}, {1000, 2}, {8192, 16}, {100000, 16}} {
		require.Equal(t, c.want, passWorkers(syncWorkers, c.n, yieldLogsPerWorker), "yielding, %d logs", c.n)
	}
}
