package segment

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// syncOps counts the fdatasyncs, directory fsyncs and syncfs calls of trace.
func syncOps(trace []errorfs.Call) int {
	n := 0
	for _, c := range trace {
		if c.Op == errorfs.OpSync || c.Op == errorfs.OpSyncDir {
			n++
		}
	}
	return n
}

// Issue 23: with a yield hook, a pass calls it before every fdatasync, fsync
// and syncfs it issues and starts none while the hook blocks (a fake commit
// log whose sync is in flight): after the k-th call returned, exactly k syncs
// were issued when the hook is entered again, and the pass (one sync in
// flight: 5 logs, yieldLogsPerWorker) issues as many syncs as it called the
// hook. Each log here has a sealed file a deferred rotation left unsynced,
// its active file and its new directory to sync: three per log. With
// SetSyncFS, one call before the one syncfs.
func TestFlushYieldsBeforeEverySync(t *testing.T) {
	for _, syncFS := range []bool{false, true} {
		t.Run(fmt.Sprintf("syncfs %v", syncFS), func(t *testing.T) {
			const n = syncFSMin
			mem := vfs.NewStrictMem("/d")
			fs := errorfs.New(mem)
			c := NewCommitter()
			c.SetSyncFS(syncFS)
			for i := range n {
				l, _, err := openLog(fs, fmt.Sprintf("/d/p%d", i), Options{DeferRotationSync: true, MaxFileBytes: 400})
				require.NoError(t, err)
				defer l.Close()
				for b := 0; b < 2; b++ {
					_, err := l.Append(int64(b), recs(10*b, 2, 300))
					require.NoError(t, err)
				}
				c.Mark(l)
			}
			entered, release := make(chan struct{}), make(chan struct{})
			c.SetYield(func() {
				entered <- struct{}{}
				<-release
			})
			fs.Record()
			flushed := make(chan error, 1)
			go func() { flushed <- c.Flush() }()
			calls := 0
			for done := false; !done; {
				select {
				case <-entered:
					require.Equal(t, calls, syncOps(fs.Trace()), "a sync issued while the hook blocked, or without it")
					calls++
					release <- struct{}{}
				case err := <-flushed:
					require.NoError(t, err)
					done = true
				}
			}
			assert.Equal(t, calls, syncOps(fs.Trace()), "one hook call before each sync")
			if syncFS {
				assert.Equal(t, 1, calls)
			} else {
				assert.Equal(t, 3*n, calls, "sealed file, active file, directory of each log")
			}
			for i := range n {
				dir := fmt.Sprintf("/d/p%d", i)
				assert.Equal(t, segBytes(t, mem, dir), segBytes(t, mem.Crash(false), dir), "durable after the pass")
			}
		})
	}
}

// Without a hook (SetYield(nil)) a pass runs as before: nothing waits.
func TestFlushWithoutYield(t *testing.T) {
	mem := vfs.NewStrictMem("/d")
	c := NewCommitter()
	c.SetYield(func() { t.Fatal("the hook was reset") })
	c.SetYield(nil)
	l, _, err := openLog(mem, "/d/p", Options{})
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Append(1, recs(0, 2, 100))
	require.NoError(t, err)
	c.Mark(l)
	require.NoError(t, c.Flush())
	assert.False(t, l.Dirty())
}
