package segment

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateFS makes every segment-file Sync announce itself on entered and wait
// for release, so a test can hold a sync pass open.
type gateFS struct {
	*vfs.Mem
	entered chan struct{}
	release chan struct{}
}

func (g *gateFS) OpenFile(name string, flag int) (file, error) {
	f, err := g.Mem.OpenFile(name, flag)
	return gateFile{f, g}, err
}

func (g *gateFS) SyncFS(dir string) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Mem.SyncFS(dir)
}

type gateFile struct {
	file
	g *gateFS
}

func (f gateFile) Sync() error {
	f.g.entered <- struct{}{}
	<-f.g.release
	return f.file.Sync()
}

func TestParseSyncPolicy(t *testing.T) {
	for s, want := range map[string]SyncPolicy{"always": SyncAlways, "Interval": SyncInterval, "never": SyncNever} {
		p, err := ParseSyncPolicy(s)
		require.NoError(t, err)
		assert.Equal(t, want, p)
		assert.Equal(t, want.String(), p.String())
	}
	_, err := ParseSyncPolicy("sometimes")
	assert.ErrorIs(t, err, ErrBadPolicy)
}

func TestSyncAlwaysReleasesWaitersOnlyAfterThePass(t *testing.T) {
	g := &gateFS{Mem: vfs.NewMem(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	l, _, err := openLog(g, "/p", Options{})
	require.NoError(t, err)
	c := NewCommitter(SyncAlways, 0)
	_, err = l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Commit(l) }()
	<-g.entered // the pass is syncing l
	select {
	case <-done:
		t.Fatal("Commit returned before its sync pass finished")
	default:
	}
	assert.Len(t, g.Crash(true).Bytes("/p/"+segName(1)), 0, "nothing durable yet")
	close(g.release)
	require.NoError(t, <-done)
	assert.Len(t, g.Crash(true).Bytes("/p/"+segName(1)), len(g.Bytes("/p/"+segName(1))), "durable once Commit returned")
	require.NoError(t, c.Close())
	assert.Len(t, c.SyncLatencies(), 1, "one pass")
	require.NoError(t, l.Close())
}

func TestSyncAlwaysConcurrentAppendersAcrossLogs(t *testing.T) {
	fs := vfs.NewMem()
	c := NewCommitter(SyncAlways, 0)
	const logs, writers, appends = 20, 8, 25
	ls := make([]*Log, logs)
	locks := make([]sync.Mutex, logs) // the broker's partition locks
	for i := range ls {
		l, _, err := openLog(fs, fmt.Sprintf("/p%d", i), Options{})
		require.NoError(t, err)
		ls[i] = l
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := 0; a < appends; a++ {
				i := (w*7 + a) % logs
				locks[i].Lock()
				_, err := ls[i].Append(int64(a), recs(a, 2, 20))
				locks[i].Unlock()
				if !assert.NoError(t, err) {
					return
				}
				if !assert.NoError(t, c.Commit(ls[i])) {
					return
				}
				// What Commit covered survives a crash right now.
				crashed := fs.Crash(false)
				l2, _, err := openLog(crashed, fmt.Sprintf("/p%d", i), Options{})
				if !assert.NoError(t, err) {
					return
				}
				assert.GreaterOrEqual(t, l2.NextOffset(), uint64(3), "the append just committed is durable")
				_ = l2.Close()
			}
		}()
	}
	wg.Wait()
	require.NoError(t, c.Close())
	lat := c.SyncLatencies()
	assert.NotEmpty(t, lat)
	assert.LessOrEqual(t, len(lat), writers*appends, "at most one pass per Commit")
	crashed := fs.Crash(false)
	total := uint64(0)
	for i := range ls {
		l2, _, err := openLog(crashed, fmt.Sprintf("/p%d", i), Options{})
		require.NoError(t, err)
		total += l2.NextOffset() - 1
		require.NoError(t, ls[i].Close())
	}
	assert.Equal(t, uint64(writers*appends*2), total, "every committed append survived")
	assert.ErrorIs(t, c.Commit(ls[0]), ErrClosed)
}

func TestSyncIntervalReturnsAtOnceAndSyncsSoon(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	c := NewCommitter(SyncInterval, time.Millisecond)
	_, err := l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	require.NoError(t, c.Commit(l))
	require.Eventually(t, func() bool { return !l.dirty() }, 5*time.Second, time.Millisecond)
	assert.NotEmpty(t, fs.Crash(false).Bytes("/p/"+segName(1)))
	require.NoError(t, c.Close())
	require.NoError(t, l.Close())
}

func TestSyncNeverLosesUnsyncedOnCrash(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	c := NewCommitter(SyncNever, 0)
	_, err := l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	require.NoError(t, c.Commit(l))
	l2, _ := openMem(t, fs.Crash(false), Options{})
	assert.Equal(t, uint64(1), l2.NextOffset(), "nothing was synced")
	require.NoError(t, c.Close())
	require.NoError(t, l.Close())
	l3, _ := openMem(t, fs.Crash(false), Options{})
	assert.Equal(t, uint64(4), l3.NextOffset(), "Close syncs")
}

// Storage crash test: random appends, syncs and rotations; a crash at any
// point recovers a prefix that holds everything synced before it.
func TestCrashRecoversASyncedPrefix(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 2000, Codec: CodecS2, MinCompressBytes: -1})
	synced := uint64(0)
	for step := 0; step < 120; step++ {
		n := step%7 + 1
		_, err := l.Append(int64(step), recs(int(l.NextOffset()-1), n, 40+step%50))
		require.NoError(t, err)
		if step%5 == 0 {
			require.NoError(t, l.Sync())
			synced = l.NextOffset() - 1
		}
		for _, keepIdx := range []bool{true, false} {
			crashed := fs.Crash(keepIdx)
			l2, _, err := openLog(crashed, "/p", Options{MaxFileBytes: 2000})
			require.NoError(t, err, "step %d", step)
			got := readAll(t, l2, 1)
			require.GreaterOrEqual(t, uint64(len(got)), synced, "step %d", step)
			for i, m := range got {
				require.Equal(t, uint64(i+1), m.Offset)
				requireRecord(t, rec(i, len(m.Payload)), m)
			}
			require.NoError(t, l2.Close())
		}
	}
}

func TestSyncAlwaysIndependentLogsDoNotWaitForEachOther(t *testing.T) {
	held := &gateFS{Mem: vfs.NewMem(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	slow, _, err := openLog(held, "/slow", Options{})
	require.NoError(t, err)
	fs := vfs.NewMem()
	fast, _, err := openLog(fs, "/fast", Options{})
	require.NoError(t, err)
	c := NewCommitter(SyncAlways, 0)

	_, err = slow.Append(1, recs(0, 1, 10))
	require.NoError(t, err)
	slowDone := make(chan error, 1)
	go func() { slowDone <- c.Commit(slow) }()
	<-held.entered // slow's fdatasync is in flight and stays there

	_, err = fast.Append(1, recs(0, 2, 10))
	require.NoError(t, err)
	fastDone := make(chan error, 1)
	go func() { fastDone <- c.Commit(fast) }()
	select {
	case err := <-fastDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a Commit on one log waited for another log's sync")
	}
	assert.Len(t, fs.Crash(true).Bytes("/fast/"+segName(1)), len(fs.Bytes("/fast/"+segName(1))), "fast is durable")
	select {
	case <-slowDone:
		t.Fatal("the held Commit returned before its fdatasync finished")
	default:
	}
	close(held.release)
	require.NoError(t, <-slowDone)
	require.NoError(t, c.Close())
	require.NoError(t, slow.Close())
	require.NoError(t, fast.Close())
}

func TestSyncSkipsTheFdatasyncWhenAnEarlierSyncCoveredEverything(t *testing.T) {
	g := &gateFS{Mem: vfs.NewMem(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	close(g.release)
	l, _, err := openLog(g, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 1, 10))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	require.Len(t, g.entered, 1, "the first Sync flushes the file")
	require.NoError(t, l.Sync())
	assert.Len(t, g.entered, 1, "nothing appended since: no second fdatasync")
	_, err = l.Append(2, recs(1, 1, 10))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	assert.Len(t, g.entered, 2, "a new append needs a new fdatasync")
	require.NoError(t, l.Close())
}

func TestSyncAlwaysMoreLogsThanDirectSyncsUseThePass(t *testing.T) {
	g := &gateFS{Mem: vfs.NewMem(), entered: make(chan struct{}, 4*directSyncs), release: make(chan struct{})}
	c := NewCommitter(SyncAlways, 0)
	n := directSyncs + 4
	ls := make([]*Log, n)
	done := make(chan error, n)
	for i := range ls {
		l, _, err := openLog(g, fmt.Sprintf("/p%d", i), Options{})
		require.NoError(t, err)
		ls[i] = l
		_, err = l.Append(1, recs(0, 1, 10))
		require.NoError(t, err)
	}
	for i := 0; i < directSyncs; i++ {
		go func() { done <- c.Commit(ls[i]) }()
		<-g.entered // every direct token is now held by a sync in flight
	}
	for i := directSyncs; i < n; i++ {
		go func() { done <- c.Commit(ls[i]) }()
	}
	<-g.entered // the overflow Commits joined a shared pass, which is syncing
	close(g.release)
	for range n {
		require.NoError(t, <-done)
	}
	crashed := g.Crash(true)
	for i := range ls {
		assert.Len(t, crashed.Bytes(fmt.Sprintf("/p%d/%s", i, segName(1))), len(g.Bytes(fmt.Sprintf("/p%d/%s", i, segName(1)))), "log %d durable", i)
	}
	require.NoError(t, c.Close())
	for _, l := range ls {
		require.NoError(t, l.Close())
	}
}

func TestSyncAlwaysCommitFollowsASyncOfItsLogInFlight(t *testing.T) {
	g := &gateFS{Mem: vfs.NewMem(), entered: make(chan struct{}, 4*directSyncs), release: make(chan struct{})}
	c := NewCommitter(SyncAlways, 0)
	ls := make([]*Log, directSyncs)
	done := make(chan error, directSyncs+1)
	for i := range ls {
		l, _, err := openLog(g, fmt.Sprintf("/p%d", i), Options{})
		require.NoError(t, err)
		ls[i] = l
		_, err = l.Append(1, recs(0, 1, 10))
		require.NoError(t, err)
		go func() { done <- c.Commit(l) }()
		<-g.entered // every token is held by a sync in flight
	}
	_, err := ls[0].Append(2, recs(1, 1, 10))
	require.NoError(t, err)
	go func() { done <- c.Commit(ls[0]) }()
	require.Eventually(t, func() bool { return ls[0].syncers.Load() == 2 }, 5*time.Second, time.Millisecond,
		"the second Commit queues on its log")
	c.mu.Lock()
	assert.Empty(t, c.dirty, "it did not fall back to the shared pass")
	c.mu.Unlock()
	close(g.release)
	for range directSyncs + 1 {
		require.NoError(t, <-done)
	}
	assert.Len(t, g.Crash(true).Bytes("/p0/"+segName(1)), len(g.Bytes("/p0/"+segName(1))), "both appends durable")
	require.NoError(t, c.Close())
	for _, l := range ls {
		require.NoError(t, l.Close())
	}
}
