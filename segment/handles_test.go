package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

func TestHandleCacheBoundsOpenFiles(t *testing.T) {
	cases := []struct {
		name       string
		logs, max  int
		rotateSize int64
	}{
		{name: "active files only", logs: 60, max: 16},
		{name: "sealed files read too", logs: 30, max: 10, rotateSize: 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache := NewHandleCache(tc.max)
			before := openFDs(t)
			logs := make([]*Log, tc.logs)
			for i := range logs {
				l, _, err := Open(filepath.Join(dir, fmt.Sprint(i)), Options{Handles: cache, MaxFileBytes: tc.rotateSize})
				require.NoError(t, err)
				logs[i] = l
				for j := range 3 {
					_, err := l.Append(int64(j+1), recs(i*10+2*j, 2, 100))
					require.NoError(t, err)
				}
				assert.LessOrEqual(t, cache.Stats().Open, tc.max, "after log %d", i)
			}
			for i, l := range logs {
				msgs := readAll(t, l, 1)
				require.Len(t, msgs, 6, "log %d", i)
				requireRecord(t, rec(i*10, 100), msgs[0])
				requireRecord(t, rec(i*10+5, 100), msgs[5])
				_, _, ok, err := l.FindTransaction(fmt.Sprintf("tx-%d", i*10+1))
				require.NoError(t, err)
				assert.True(t, ok)
				assert.LessOrEqual(t, cache.Stats().Open, tc.max)
			}
			st := cache.Stats()
			assert.Greater(t, st.Releases, uint64(0))
			assert.LessOrEqual(t, openFDs(t)-before, tc.max)
			for _, l := range logs {
				require.NoError(t, l.Close())
			}
			assert.Equal(t, 0, cache.Stats().Open)
			assert.Equal(t, 0, cache.Stats().Logs)
		})
	}
}

func TestReleaseThenUseReloads(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 200})
	for j := range 5 {
		_, err := l.Append(int64(j+1), recs(j, 1, 150))
		require.NoError(t, err)
	}
	_, _, ok, err := l.FindTransaction("tx-2")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, l.Release(), "an idle log releases")
	assert.False(t, l.Loaded())
	assert.False(t, l.Release(), "a released log has nothing to release")
	assert.Equal(t, uint64(6), l.NextOffset(), "offsets answer without a reload")
	assert.False(t, l.Loaded())

	off, _, ok, err := l.FindTransaction("tx-3")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(4), off)
	require.True(t, l.Release())
	first, err := l.Append(10, recs(5, 1, 150))
	require.NoError(t, err)
	assert.Equal(t, uint64(6), first)
	require.True(t, l.Release())
	assert.Equal(t, uint64(3), l.OffsetAtOrAfterTime(3))
	msgs := readAll(t, l, 1)
	require.Len(t, msgs, 6)
	requireRecord(t, rec(5, 150), msgs[5])
	require.NoError(t, l.Close())
	assert.False(t, l.Release(), "a closed log does not release")
}

// Release closes handles without an fdatasync: the appends stay unsynced
// (a crash now loses them) until a later sync, which reaches the released
// Log's active file by name without loading the Log.
func TestReleaseLeavesAppendsForTheNextSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		sync func(t *testing.T, l *Log)
	}{
		{"Sync", func(t *testing.T, l *Log) {
			require.NoError(t, l.Sync())
			assert.False(t, l.Loaded(), "the sync did not load the log")
			assert.False(t, l.Dirty())
		}},
		{"Close", func(t *testing.T, l *Log) { require.NoError(t, l.Close()) }},
		{"Flush of one log", func(t *testing.T, l *Log) {
			c := NewCommitter()
			defer c.Close()
			c.Mark(l)
			require.NoError(t, c.Flush())
			assert.False(t, l.Dirty())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewStrictMem("/")
			l, _ := openMem(t, fs, Options{})
			require.NoError(t, l.Sync()) // the directory and the empty file are durable
			_, err := l.Append(1, recs(0, 3, 50))
			require.NoError(t, err)
			require.True(t, l.Release())
			assert.True(t, l.Dirty(), "a released log keeps its unsynced appends")
			lost, _ := openMem(t, fs.Crash(false), Options{})
			assert.Equal(t, uint64(1), lost.NextOffset(), "nothing synced them yet")

			tc.sync(t, l)
			kept, _ := openMem(t, fs.Crash(false), Options{})
			assert.Equal(t, uint64(4), kept.NextOffset())
		})
	}
}

// A flush pass over many released dirty logs covers them as it covers
// loaded ones: by default an fdatasync each through a descriptor opened for
// it (so a file system whose syncfs syncs nothing loses nothing), with
// SetSyncFS its one syncfs.
func TestFlushCoversReleasedLogs(t *testing.T) {
	for _, syncFS := range []bool{false, true} {
		t.Run(fmt.Sprintf("syncfs %v", syncFS), func(t *testing.T) { testFlushCoversReleasedLogs(t, syncFS) })
	}
}

func testFlushCoversReleasedLogs(t *testing.T, syncFS bool) {
	mem := vfs.NewStrictMem("/d")
	mem.SetSyncFSNoop(!syncFS)
	c := NewCommitter()
	c.SetSyncFS(syncFS)
	defer c.Close()
	logs := make([]*Log, syncFSMin)
	for i := range logs {
		var err error
		logs[i], _, err = openLog(mem, fmt.Sprintf("/d/p%d", i), Options{})
		require.NoError(t, err)
		_, err = logs[i].Append(1, recs(i, 2, 20))
		require.NoError(t, err)
		c.Mark(logs[i])
		require.True(t, logs[i].Release())
	}
	require.NoError(t, c.Flush())
	crashed := mem.Crash(false)
	for i, l := range logs {
		assert.False(t, l.Dirty())
		assert.False(t, l.Loaded())
		name := fmt.Sprintf("/d/p%d/%s", i, segName(1))
		assert.Equal(t, mem.Bytes(name), crashed.Bytes(name), name)
		assert.NotEmpty(t, crashed.Bytes(name), name)
	}
}

func TestReleaseWaitsForPins(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	_, err := l.Append(1, recs(0, 1, 50))
	require.NoError(t, err)
	require.NoError(t, l.pin())
	assert.False(t, l.Release(), "a pinned log is in use")
	l.unpin()
	assert.True(t, l.Release())
}

func TestOpenSummaryReadsNothingUntilUsed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	l, _, err := Open(dir, Options{MaxFileBytes: 200})
	require.NoError(t, err)
	for j := range 4 {
		_, err := l.Append(int64(100+j), recs(j, 1, 150))
		require.NoError(t, err)
	}
	_, _, err = l.DeleteFilesBefore(3)
	require.NoError(t, err)
	sum := l.Summary()
	require.NoError(t, l.Close())
	assert.Equal(t, Summary{FirstOffset: 3, NextOffset: 5, LastTimestampMicros: 103, ActiveBase: 4}, sum)
	assert.Equal(t, sum, OpenSummary(dir, Options{}, sum).Summary(), "an unused lazy log reports the summary it was opened from")

	lz := OpenSummary(dir, Options{MaxFileBytes: 200}, sum)
	assert.False(t, lz.Loaded())
	assert.Equal(t, uint64(3), lz.FirstOffset())
	assert.Equal(t, uint64(5), lz.NextOffset())
	assert.Equal(t, int64(103), lz.LastTimestamp())
	assert.False(t, lz.Loaded(), "the offsets come from the summary")
	msgs := readAll(t, lz, 1)
	require.Len(t, msgs, 2)
	requireRecord(t, rec(2, 150), msgs[0])
	assert.True(t, lz.Loaded())
	first, err := lz.Append(200, recs(9, 1, 10))
	require.NoError(t, err)
	assert.Equal(t, uint64(5), first)
	require.NoError(t, lz.Close())
}

func TestHandleCacheConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	cache := NewHandleCache(8)
	logs := make([]*Log, 12)
	for i := range logs {
		l, _, err := Open(filepath.Join(dir, fmt.Sprint(i)), Options{Handles: cache, MaxFileBytes: 400})
		require.NoError(t, err)
		logs[i] = l
	}
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Add(2)
		go func() { // the single appender of l
			defer wg.Done()
			for j := range 40 {
				_, err := l.Append(int64(j+1), recs(i*100+j, 1, 60))
				assert.NoError(t, err)
			}
		}()
		go func() { // a reader of l and a releaser of the others
			defer wg.Done()
			var rb ReadBuffer
			for j := range 40 {
				_, err := l.Read(1, 10, 0, &rb)
				assert.NoError(t, err)
				logs[(i+j)%len(logs)].Release()
			}
		}()
	}
	wg.Wait()
	for i, l := range logs {
		msgs := readAll(t, l, 1)
		require.Len(t, msgs, 40)
		requireRecord(t, rec(i*100+39, 60), msgs[39])
		require.NoError(t, l.Close())
	}
}

// sweepRing builds a cache whose ring holds n bare Logs (the sweep reads only
// their pins, referenced bits and sync counters).
func sweepRing(n int) (*HandleCache, []*Log) {
	c := NewHandleCache(4)
	logs := make([]*Log, n)
	for i := range logs {
		logs[i] = &Log{slot: i}
		c.ring.logs = append(c.ring.logs, logs[i])
	}
	return c, logs
}

func TestSweepPicksAVictim(t *testing.T) {
	cases := []struct {
		name    string
		set     func(logs []*Log)
		want    int // index of the victim, -1 for none
		wantEnd int // the hand after the sweep
	}{
		{"the first idle log", func([]*Log) {}, 1, 2}, // log 0 is self
		{"referenced logs get a second chance", func(l []*Log) {
			for _, x := range l {
				x.referenced.Store(true)
			}
		}, 1, 2}, // a round of clearing (the hand wraps past self), then log 1 again
		{"pinned logs are skipped", func(l []*Log) { l[1].pins.Store(1); l[2].pins.Store(1) }, 3, 4},
		{"a clean log beats an earlier dirty one", func(l []*Log) { l[1].appendSeq.Store(1) }, 2, 3},
		{"a dirty log when no clean one is left", func(l []*Log) {
			for _, x := range l {
				x.appendSeq.Store(1)
			}
		}, 1, 1}, // two whole rounds (11 steps) looked for a clean one
		{"none when every other log is in use, after one round", func(l []*Log) {
			for _, x := range l[1:] {
				x.pins.Store(1)
			}
		}, -1, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, logs := sweepRing(5)
			tc.set(logs)
			got := c.sweepLocked(logs[0])
			if tc.want < 0 {
				assert.Nil(t, got)
			} else {
				assert.Same(t, logs[tc.want], got)
			}
			assert.Equal(t, tc.wantEnd, c.ring.hand)
		})
	}
}

// With thousands of Logs in use the sweep stops after one round instead of
// sweeping the ring again for every pinned victim.
func BenchmarkSweepEveryLogPinned(b *testing.B) {
	c, logs := sweepRing(1600)
	for _, l := range logs[1:] {
		l.pins.Store(1)
	}
	for b.Loop() {
		if c.sweepLocked(logs[0]) != nil {
			b.Fatal("a pinned log was picked")
		}
	}
}
