package segment

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"sync"
	"syscall"
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

// traceFS records, in order, the syncs and write-backs of its files and the
// directory syncs, with the yield hook's calls in the same trace; its files
// can write back (vfs.WriteBacker), as vfs.OS's do.
type traceFS struct {
	vfs.FS
	mu     sync.Mutex
	trace  []string
	failWB bool // every write-back fails (EIO)
}

func (f *traceFS) note(s string) {
	f.mu.Lock()
	f.trace = append(f.trace, s)
	f.mu.Unlock()
}

func (f *traceFS) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trace
	f.trace = nil
	return t
}

func (f *traceFS) OpenFile(name string, flag int) (vfs.File, error) {
	h, err := f.FS.OpenFile(name, flag)
	if err != nil {
		return nil, err
	}
	return &traceFile{File: h, fs: f}, nil
}

func (f *traceFS) SyncDir(dir string) error {
	f.note("syncdir")
	return f.FS.SyncDir(dir)
}

type traceFile struct {
	vfs.File
	fs *traceFS
}

func (h *traceFile) Sync() error {
	h.fs.note("sync " + path.Base(h.Name()))
	return h.File.Sync()
}

func (h *traceFile) WriteBack(off, n int64) error {
	h.fs.note(fmt.Sprintf("writeback %s %d+%d", path.Base(h.Name()), off, n))
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.fs.failWB {
		return syscall.EIO
	}
	return nil
}

// Issue 23: a pass with a yield hook writes a large unsynced range back in
// writeBackChunk pieces, the hook called before each, and leaves the last
// piece to the fdatasync; the next pass starts where that fdatasync ended.
// A file found at Open is synced whole (its unsynced range is not known),
// and a pass without a hook never writes back.
func TestFlushWritesBackInPiecesBetweenYields(t *testing.T) {
	const k = writeBackChunk
	fs := &traceFS{FS: vfs.NewStrictMem("/d")}
	seg := "00000000000000000001.seg"
	size := func() int64 {
		n, err := fs.FS.ReadFile("/d/p/" + seg)
		if errors.Is(err, iofs.ErrNotExist) {
			return 0
		}
		require.NoError(t, err)
		return int64(len(n))
	}
	fill := func(l *Log, upTo int64) {
		for size() < upTo {
			_, err := l.Append(1, recs(0, 25, 2000))
			require.NoError(t, err)
		}
	}
	c := NewCommitter()
	c.SetYield(func() { fs.note("yield") })
	pass := func(l *Log) []string {
		c.Mark(l)
		require.NoError(t, c.Flush())
		return fs.take()
	}

	l, _, err := openLog(fs, "/d/p", Options{MaxFileBytes: 64 << 20})
	require.NoError(t, err)
	fs.take()        // the directory's creation
	fill(l, 3*k+k/2) // 3.5 pieces: three written back, the half left to the fdatasync
	s1 := size()
	assert.Equal(t, []string{
		"yield", fmt.Sprintf("writeback %s 0+%d", seg, k),
		"yield", fmt.Sprintf("writeback %s %d+%d", seg, k, k),
		"yield", fmt.Sprintf("writeback %s %d+%d", seg, 2*k, k),
		"yield", "sync " + seg,
		"yield", "syncdir",
	}, pass(l), "%d bytes", s1)

	fill(l, s1+k+k/2) // from where the last pass's fdatasync ended
	assert.Equal(t, []string{
		"yield", fmt.Sprintf("writeback %s %d+%d", seg, s1, k),
		"yield", "sync " + seg,
	}, pass(l))

	fill(l, size()+k/2) // at most one piece: the fdatasync alone
	assert.Equal(t, []string{"yield", "sync " + seg}, pass(l))
	require.NoError(t, l.Close())
	fs.take()

	l, _, err = openLog(fs, "/d/p", Options{MaxFileBytes: 64 << 20})
	require.NoError(t, err)
	defer l.Close()
	fs.take()
	fill(l, size()+2*k)
	assert.Equal(t, []string{"yield", "sync " + seg}, pass(l), "a file found at Open is synced whole")
	fill(l, size()+k+k/2)
	assert.Len(t, pass(l), 4, "then in pieces from where that sync ended")

	fill(l, size()+2*k)
	c.SetYield(nil)
	assert.Equal(t, []string{"sync " + seg}, pass(l), "no hook: no write-back")
}

// A failed write-back fails the log as a failed fdatasync does (sticky,
// ErrSyncFailed): it may have consumed the error the fdatasync would report.
func TestFlushWriteBackFailureIsSticky(t *testing.T) {
	fs := &traceFS{FS: vfs.NewStrictMem("/d"), failWB: true}
	c := NewCommitter()
	c.SetYield(func() {})
	l, _, err := openLog(fs, "/d/p", Options{MaxFileBytes: 64 << 20})
	require.NoError(t, err)
	defer l.Close()
	for range 20 {
		_, err := l.Append(1, recs(0, 25, 2000)) // 1 MB: two pieces
		require.NoError(t, err)
	}
	c.Mark(l)
	require.ErrorIs(t, c.Flush(), ErrSyncFailed)
	assert.True(t, l.Dirty())
	fs.mu.Lock()
	fs.failWB = false
	fs.mu.Unlock()
	require.ErrorIs(t, c.Flush(), ErrSyncFailed, "still marked, still failed")
	require.ErrorIs(t, l.Sync(), ErrSyncFailed)
}
