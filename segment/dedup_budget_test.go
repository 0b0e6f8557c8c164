package segment

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/combmq/comb/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillDedupLogs opens n logs sharing cache, each holding 10 pushes of 40 records (transaction
// ids tx-<log*1000+k>) with runs of 64 ids sealed, and loads their dedup indexes.
func fillDedupLogs(t *testing.T, cache *HandleCache, n int) []*Log {
	t.Helper()
	withRunEntries(t, 64)
	dir := t.TempDir()
	logs := make([]*Log, n)
	for i := range logs {
		l, _, err := Open(filepath.Join(dir, fmt.Sprint(i)), Options{Handles: cache})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		_, err = l.Append(1, recs(i*1000, 40, 50))
		require.NoError(t, err)
		_, _, ok, err := l.FindTransaction("load") // a log with records loads its index
		require.NoError(t, err)
		require.False(t, ok)
		for p := 1; p < 10; p++ {
			_, err := l.Append(int64(p+1), recs(i*1000+p*40, 40, 50))
			require.NoError(t, err)
		}
		l.dedup.WaitMerges()
		logs[i] = l
	}
	return logs
}

// requireDedupFinds checks that l answers tx-<k> with offset off for each (k, off).
func requireDedupFinds(t *testing.T, l *Log, want map[int]uint64) {
	t.Helper()
	for k, off := range want {
		got, _, ok, err := l.FindTransaction(fmt.Sprintf("tx-%d", k))
		require.NoError(t, err)
		require.True(t, ok, "tx-%d", k)
		require.Equal(t, off, got, "tx-%d", k)
	}
}

// Issue 23's cliff: the HandleCache closing a log's handles must not drop its dedup index, so
// the next lookup reads no run file again. Eight logs take turns in a cache of 6 handles; every
// log's index was loaded once and stays loaded, and answers ids in its runs (whose files reopen
// for a page read) and in its table.
func TestHandleEvictionKeepsDedupIndex(t *testing.T) {
	cache := NewHandleCache(6)
	logs := fillDedupLogs(t, cache, 8)
	for round := range 3 {
		for i, l := range logs {
			// Offsets start at 1: record k of log i is at offset k-i*1000+1.
			requireDedupFinds(t, l, map[int]uint64{i * 1000: 1, i*1000 + 200: 201, i*1000 + 399: 400})
			_, err := l.Append(int64(20+round), recs(i*1000+400+round, 1, 50))
			require.NoError(t, err)
		}
	}
	assert.Greater(t, cache.Stats().Releases, uint64(8), "the cache released logs")
	released := 0
	for i, l := range logs {
		assert.True(t, l.DedupLoaded(), "log %d", i)
		st := l.dedup.Stats()
		loads, runs := st.Loads, len(st.RunCounts)
		assert.Equal(t, 1, loads, "log %d: its dedup index was loaded once", i)
		assert.Greater(t, runs, 0, "log %d has sealed runs", i)
		if !l.Loaded() {
			released++
		}
	}
	assert.Greater(t, released, 0, "some logs have their handles closed")
	st := cache.DedupStats()
	assert.Equal(t, 8, st.Logs)
	assert.Equal(t, uint64(0), st.Evictions)
	assert.LessOrEqual(t, cache.Stats().Open, 6+5) // the limit, passed by at most the log in use
}

// A parked dedup.idx (its handle closed by the cache) takes the entries of later appends and a
// seal's restart, so a reopened log loads it whole: no rebuild, every id answered.
func TestParkedDedupFileStaysCurrent(t *testing.T) {
	withRunEntries(t, 64)
	dir := t.TempDir()
	cache := NewHandleCache(4)
	l, _, err := Open(filepath.Join(dir, "a"), Options{Handles: cache})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 30, 50))
	require.NoError(t, err)
	_, _, _, err = l.FindTransaction("load")
	require.NoError(t, err)
	require.True(t, l.tryRelease(false))
	require.False(t, l.Loaded())
	require.True(t, l.DedupLoaded())
	st := l.dedup.Stats()
	require.True(t, st.Parked)
	require.False(t, st.FileOpen)

	// 30 more ids: the table passes 64 at the second push and seals while the file is parked.
	_, err = l.Append(2, recs(30, 20, 50))
	require.NoError(t, err)
	require.True(t, l.tryRelease(false))
	_, err = l.Append(3, recs(50, 30, 50))
	require.NoError(t, err)
	require.True(t, l.tryRelease(false))
	_, err = l.Append(4, recs(80, 5, 50))
	require.NoError(t, err)
	require.True(t, l.tryRelease(false)) // parked with 5 entries written at the park
	l.dedup.WaitMerges()
	require.NoError(t, l.Close())
	assert.Equal(t, DedupStats{Budget: DefaultDedupBudget}, cache.DedupStats(), "a closed log holds no dedup bytes")

	var rebuilt []string
	l, _, err = Open(filepath.Join(dir, "a"), Options{Handles: cache, OnRecover: func(_ string, rep *RecoveryReport) {
		rebuilt = append(rebuilt, rep.DedupRebuilt)
	}})
	require.NoError(t, err)
	defer l.Close()
	want := map[int]uint64{}
	for k := range 85 {
		want[k] = uint64(k + 1)
	}
	requireDedupFinds(t, l, want)
	assert.Empty(t, rebuilt)
	// The file holds exactly the ids after the runs: the load indexed none from the segments.
	b, err := l.fs.ReadFile(filepath.Join(dir, "a", dedupFileName))
	require.NoError(t, err)
	runsEnd := l.dedup.Stats().RunsEnd
	require.Greater(t, runsEnd, uint64(0))
	entries := 0
	_, err = index.ScanDedup(b, func(int, uint64, uint64) { entries++ })
	require.NoError(t, err)
	assert.Equal(t, 85-int(runsEnd), entries)
	assert.Equal(t, runsEnd, binary.LittleEndian.Uint64(b[8:]), "dedup.idx header base")
}

// The dedup indexes have their own budget of bytes: past it the least recently used log's
// index is dropped (and reloads from its files when next used, answering as before).
func TestDedupBudgetDropsLeastRecentlyUsed(t *testing.T) {
	cache := NewHandleCache(1000)
	logs := fillDedupLogs(t, cache, 3)
	one := cache.DedupStats().Bytes / 3
	require.Greater(t, one, int64(0))
	cache.SetDedupBudget(2*one + one/2)
	logs[0].dref.Store(false)
	logs[1].dref.Store(false)
	// Log 3 is loaded and grows: the budget drops the index of one of the others.
	l3, _, err := Open(filepath.Join(t.TempDir(), "3"), Options{Handles: cache})
	require.NoError(t, err)
	defer l3.Close()
	for p := range 10 {
		_, err := l3.Append(int64(p+1), recs(3000+p*40, 40, 50))
		require.NoError(t, err)
		_, _, _, err = l3.FindTransaction("load")
		require.NoError(t, err)
	}
	st := cache.DedupStats()
	assert.GreaterOrEqual(t, st.Evictions, uint64(1))
	assert.LessOrEqual(t, st.Bytes, 2*one+one/2+one/2, "within the budget but for the log growing")
	dropped := 0
	for _, l := range logs {
		if !l.DedupLoaded() {
			dropped++
		}
	}
	assert.GreaterOrEqual(t, dropped, 1)
	assert.True(t, l3.DedupLoaded(), "never the log that grows")
	for i, l := range logs {
		requireDedupFinds(t, l, map[int]uint64{i * 1000: 1, i*1000 + 399: 400})
	}
}

// Release (the broker's idle eviction) drops the dedup index that a HandleCache release kept.
func TestReleaseDropsKeptDedupIndex(t *testing.T) {
	cache := NewHandleCache(100)
	logs := fillDedupLogs(t, cache, 1)
	l := logs[0]
	require.True(t, l.tryRelease(false))
	require.False(t, l.Loaded())
	require.True(t, l.DedupLoaded())
	require.True(t, l.Release())
	assert.False(t, l.DedupLoaded())
	assert.False(t, l.Release(), "nothing left to release")
	assert.Equal(t, 0, cache.DedupStats().Logs)
	requireDedupFinds(t, l, map[int]uint64{0: 1, 399: 400})
	assert.Equal(t, 2, l.dedup.Stats().Loads)
}

// Unappend of a log whose dedup file is parked drops the index like a loaded one's: the next
// lookup loads it again and no longer finds the ids taken back.
func TestUnappendWithParkedDedupFile(t *testing.T) {
	cache := NewHandleCache(100)
	l := fillDedupLogs(t, cache, 1)[0]
	require.True(t, l.tryRelease(false))
	first, err := l.Append(20, recs(400, 10, 50))
	require.NoError(t, err)
	requireDedupFinds(t, l, map[int]uint64{405: first + 5})
	require.NoError(t, l.Unappend(first))
	assert.False(t, l.DedupLoaded())
	_, _, ok, err := l.FindTransaction("tx-405")
	require.NoError(t, err)
	assert.False(t, ok, "an id Unappend took back")
	requireDedupFinds(t, l, map[int]uint64{0: 1, 399: 400})
	assert.Equal(t, 1, cache.DedupStats().Logs)
}

// Logs owned by different goroutines share a small handle cache and a small dedup budget,
// so every append and lookup evicts another goroutine's handles or dedup index: every
// answer stays exact and nothing deadlocks (run under -race).
func TestDedupEvictionConcurrent(t *testing.T) {
	cache := NewHandleCache(8)
	logs := fillDedupLogs(t, cache, 8)
	cache.SetDedupBudget(cache.DedupStats().Bytes / 3)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 15 {
				for _, i := range []int{2 * g, 2*g + 1} {
					l := logs[i]
					k := i*1000 + 400 + round*10
					first, err := l.Append(int64(20+round), recs(k, 10, 50))
					if err != nil {
						errs <- err
						return
					}
					for _, c := range [][2]uint64{{uint64(k + 9), first + 9}, {uint64(i * 1000), 1}, {uint64(i*1000 + 399), 400}} {
						off, _, ok, err := l.FindTransaction(fmt.Sprintf("tx-%d", c[0]))
						if err != nil || !ok || off != c[1] {
							errs <- fmt.Errorf("log %d tx-%d: offset %d ok %v err %v, want %d", i, c[0], off, ok, err, c[1])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Greater(t, cache.DedupStats().Evictions, uint64(0))
	assert.Greater(t, cache.Stats().Releases, uint64(0))
}
