package segment

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/segment/dedup"
	"github.com/combmq/comb/vfs"
)

// withRunEntries seals dedup runs of n ids for the test.
func withRunEntries(t testing.TB, n int) {
	old := dedupRunEntries
	dedupRunEntries = n
	t.Cleanup(func() { dedupRunEntries = old })
}

// runLog writes n records with transaction ids tx-0 .. tx-(n-1) (offsets 1 .. n) in
// segments of 5, with the dedup index loaded from the first push on, as the broker
// looks every push up before appending it, and waits for each push's merges (in the
// background) so that the runs come out as a binary counter's.
func runLog(t *testing.T, fs *vfs.Mem, n int, opts Options) *Log {
	t.Helper()
	l, _ := openMem(t, fs, opts)
	for i := 0; i < n; i += 5 {
		_, err := l.Append(int64(i), recs(i, 5, 20))
		require.NoError(t, err)
		_, _, _, err = l.FindTransaction("load")
		require.NoError(t, err)
		l.dedup.WaitMerges() // merges finish in push order, so the runs are as a binary counter's
	}
	return l
}

// runFiles lists /p's run files as (first, last), sorted by first, then last descending.
func runFiles(t *testing.T, fs *vfs.Mem) [][2]uint64 {
	t.Helper()
	names, err := fs.List("/p")
	require.NoError(t, err)
	var runs [][2]uint64
	for _, n := range names {
		if a, b, ok := dedup.ParseRunName(n); ok {
			runs = append(runs, [2]uint64{a, b})
		}
	}
	slices.SortFunc(runs, func(x, y [2]uint64) int {
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		return cmp.Compare(y[1], x[1])
	})
	return runs
}

// runName is a run file's name (index.RunFileName).
func runName(first, last uint64) string { return index.RunFileName(first, last) }

// requireNoneFound checks that k ids never stored are answered as new: every filter hit
// (false positive) is checked against the run's page and the record, never reported.
func requireNoneFound(t *testing.T, l *Log, k int) {
	t.Helper()
	ids := make([]string, k)
	for i := range ids {
		ids[i] = fmt.Sprintf("new-%d", i)
	}
	require.NoError(t, l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) {
		t.Fatalf("%s found at %d", ids[i], off)
	}))
}

// Issue 14: the active table seals a run every dedupRunEntries ids and runs merge like a
// binary counter, so 100 ids in runs of 10 leave runs of 80 and 10 ids and 10 in the table;
// every id is still found at its offset, and found again after a reopen (from the run files
// and dedup.idx, without reading the segments: nothing is reported as rebuilt).
func TestDedupRunsSealMergeAndReload(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 100, Options{})
	assert.Equal(t, [][2]uint64{{1, 80}, {81, 90}}, runFiles(t, fs))
	assert.Equal(t, uint64(90), l.dedup.Stats().RunsEnd)
	assert.Equal(t, 10, l.dedup.Stats().TableLen)
	requireEveryID(t, l, 100, "loaded")
	requireNoneFound(t, l, 10_000)
	require.NoError(t, l.Close())
	b := fs.Bytes("/p/" + dedupFileName)
	require.Len(t, b, index.DedupHeaderSize+10*index.DedupEntrySize, "dedup.idx holds the ids after the runs")
	assert.Equal(t, uint64(90), binary.LittleEndian.Uint64(b[8:]), "dedup.idx header base")

	var why string
	l, _ = openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	requireEveryID(t, l, 100, "reopened")
	requireNoneFound(t, l, 10_000)
	assert.Empty(t, why)
	assert.Equal(t, 2, len(l.dedup.Stats().RunCounts))
	require.NoError(t, l.Close())
}

// A flipped bit anywhere in a run file (header, entry, page check) is caught at the load:
// the run is deleted, reported, its offsets re-indexed from the segments, and the same run
// is written again; no stored id is ever answered as new.
func TestDedupRunEveryBitFlipIsRebuiltNeverMissed(t *testing.T) {
	withRunEntries(t, 10)
	base := vfs.NewMem()
	l := runLog(t, base, 30, Options{})
	require.NoError(t, l.Close())
	require.Equal(t, [][2]uint64{{1, 20}}, runFiles(t, base))
	run := "/p/" + runName(1, 20)
	orig, origIdx := base.Bytes(run), base.Bytes("/p/"+dedupFileName)
	for pos := 0; pos < len(orig); pos++ {
		for bit := 0; bit < 8; bit++ {
			fs := base.Crash(true)
			b := append([]byte(nil), orig...)
			b[pos] ^= 1 << bit
			fs.SetBytes(run, b)
			fs.SetBytes("/p/"+dedupFileName, origIdx)
			var why string
			l, _ := openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
			msg := fmt.Sprintf("byte %d bit %d", pos, bit)
			requireEveryID(t, l, 30, msg)
			require.Containsf(t, why, "dedup run unusable", "%s: the rebuild is reported", msg)
			l.dedup.WaitMerges() // Close would stop the merge of the runs the load sealed
			require.NoError(t, l.Close())
			require.Equalf(t, orig, fs.Bytes(run), "%s: the run is whole again", msg)
		}
	}
}

// Damage found by a lookup (a page read after the load) rebuilds the run from the segments
// and answers from it.
func TestDedupRunDamagedWhileLoaded(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	var why string
	l := runLog(t, fs, 30, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	run := "/p/" + runName(1, 20)
	orig := fs.Bytes(run)
	b := append([]byte(nil), orig...)
	b[index.RunHeaderSize+3] ^= 0x10 // the first entry's hash
	fs.SetBytes(run, b)
	requireEveryID(t, l, 30, "damaged page")
	assert.Contains(t, why, "page 0 check")
	assert.Equal(t, orig, fs.Bytes(run))

	require.NoError(t, fs.Remove(run)) // gone altogether
	why = ""
	// A run file a lookup holds open is read through its handle: the lookups still answer
	// from the removed file's bytes, which are the run's (a load rebuilds the gap).
	requireEveryID(t, l, 30, "removed run, handle open")
	assert.Empty(t, why)
	closeRunHandles(l)
	requireEveryID(t, l, 30, "missing run")
	assert.Contains(t, why, "rebuilt from the segments")
	assert.Equal(t, orig, fs.Bytes(run))
	require.NoError(t, l.Close())
}

// closeRunHandles closes the run files lookups left open, as a release by the HandleCache
// does (dedup.Index.Park, which parks dedup.idx too).
func closeRunHandles(l *Log) {
	if !l.dedup.Park() {
		panic("dedup lock held")
	}
}

// A run lost while dedup.idx was restarted after it (a crash drops the unsynced run file)
// leaves dedup.idx starting past the runs: it is not trusted and the gap is re-indexed.
func TestDedupMissingRunIsReindexed(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 100, Options{})
	require.NoError(t, l.Close())
	require.NoError(t, fs.Remove("/p/"+runName(81, 90)))
	var why string
	l, _ = openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	requireEveryID(t, l, 100, "run 81..90 missing")
	assert.Equal(t, "dedup.idx rebuilt from the segments: its entries follow offset 90 but the dedup runs end at 80 (a run was lost)", why)
	require.NoError(t, l.Close())

	// The first run missing: everything after it is re-indexed too.
	require.NoError(t, fs.Remove("/p/"+runName(1, 80)))
	why = ""
	l, _ = openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	requireEveryID(t, l, 100, "run 1..80 missing")
	l.dedup.WaitMerges()
	assert.Contains(t, why, "a run is missing")
	requireRunsChain(t, fs, 1, 100) // the load seals runs as it re-indexes (merged as they come)
	require.NoError(t, l.Close())
}

// What a crash in a merge or a rewrite leaves (the new run beside the ones it replaces) is
// redundant: the load keeps the widest run and deletes the rest (and a half-written temp
// file), and loses nothing.
func TestDedupRedundantRunsAreDeleted(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 30, Options{})
	require.NoError(t, l.Close())
	for _, fl := range [][2]uint64{{1, 10}, {11, 20}, {5, 20}} {
		entries := segmentRunEntries(t, openedLog(t, fs), fl[0], fl[1])
		fs.SetBytes("/p/"+runName(fl[0], fl[1]), index.EncodeRun(fl[0], fl[1], entries))
	}
	fs.SetBytes("/p/"+runName(1, 40)+".tmp", []byte("CMBR")) // a write a crash interrupted
	var why string
	l, _ = openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	requireEveryID(t, l, 30, "redundant runs")
	l.dedup.WaitMerges()
	assert.Empty(t, why)
	assert.Equal(t, [][2]uint64{{1, 20}}, runFiles(t, fs))
	assert.Nil(t, fs.Bytes("/p/"+runName(1, 40)+".tmp"))
	require.NoError(t, l.Close())
}

// segmentRunEntries is what a run of offsets first..last of l holds, read from its segments.
func segmentRunEntries(t *testing.T, l *Log, first, last uint64) []index.RunEntry {
	t.Helper()
	var rb ReadBuffer
	msgs, err := l.Read(first, int(last-first+1), 0, &rb)
	require.NoError(t, err)
	var entries []index.RunEntry
	for _, m := range msgs {
		if m.TransactionID != "" {
			entries = append(entries, index.RunEntry{Hash: index.HashTxn(m.TransactionID), Offset: m.Offset})
		}
	}
	index.SortRunEntries(entries)
	return entries
}

func openedLog(t *testing.T, fs *vfs.Mem) *Log {
	t.Helper()
	l, _ := openMem(t, fs, Options{})
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Runs and dedup.idx entries for offsets a crash took back (the files reached the disk,
// the segments did not) are dropped: the offsets are reused by other records.
func TestDedupRunsACrashTookBackAreDropped(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 30, Options{})
	require.NoError(t, l.Sync()) // offsets 1..30 durable
	for i := 30; i < 60; i += 5 {
		_, err := l.Append(int64(i), recs(i, 5, 20)) // offsets 31..60, never synced
		require.NoError(t, err)
		l.dedup.WaitMerges()
	}
	require.Equal(t, [][2]uint64{{1, 40}, {41, 50}}, runFiles(t, fs))
	require.NoError(t, l.dedup.Drop())
	crashed := fs.Crash(true)
	for _, name := range []string{runName(1, 40), runName(41, 50), dedupFileName} {
		crashed.SetBytes("/p/"+name, fs.Bytes("/p/"+name))
	}
	l, _ = openMem(t, crashed, Options{})
	require.Equal(t, uint64(31), l.NextOffset())
	_, err := l.Append(30, recs(1000, 5, 20)) // tx-1000.. at the reused offsets 31..35
	require.NoError(t, err)
	requireEveryID(t, l, 30, "kept")
	var got []string
	require.NoError(t, l.FindTransactions([]string{"tx-30", "tx-45", "tx-1000", "tx-1004"}, func(i int, off uint64, _ [16]byte) {
		got = append(got, fmt.Sprintf("%d@%d", i, off))
	}))
	assert.ElementsMatch(t, []string{"2@31", "3@35"}, got)
	l.dedup.WaitMerges()
	requireRunsChain(t, crashed, 1, 30)
	assert.Equal(t, [][2]uint64{{1, 20}, {21, 30}}, runFiles(t, crashed), "both runs reached past offset 30: re-indexed from the segments")
	require.NoError(t, l.Close())
}

// Retention (issue 14: memory follows the retained messages): runs wholly below the first
// offset are deleted, the oldest is rewritten without its ids once half of them expired,
// and ids retention removed are new again while the retained ones are still found.
func TestDedupRunsFollowRetention(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 200, Options{MaxFileBytes: 1000})
	before := runFiles(t, fs)
	require.Equal(t, [][2]uint64{{1, 160}, {161, 180}, {181, 190}}, before)
	_, _, err := l.DeleteFilesBefore(120)
	require.NoError(t, err)
	first := l.FirstOffset()
	require.Greater(t, first, uint64(81))
	require.LessOrEqual(t, first, uint64(120))
	requireEveryIDFrom(t, l, int(first-1), 200, "retained")
	l.dedup.WaitMerges() // the rewrite runs in the background
	requireEveryIDFrom(t, l, int(first-1), 200, "retained, rewritten")
	assert.Equal(t, [][2]uint64{{first, 160}, {161, 180}, {181, 190}}, runFiles(t, fs), "1..160 is more than half expired: rewritten")
	assert.Equal(t, int(160-first+1), l.dedup.Stats().RunCounts[0])
	var found []int
	old := make([]string, first-1)
	for i := range old {
		old[i] = fmt.Sprintf("tx-%d", i)
	}
	require.NoError(t, l.FindTransactions(old, func(i int, _ uint64, _ [16]byte) { found = append(found, i) }))
	assert.Empty(t, found, "ids of removed records are not duplicates")

	_, _, err = l.DeleteFilesBefore(185)
	require.NoError(t, err)
	first = l.FirstOffset()
	requireEveryIDFrom(t, l, int(first-1), 200, "retained")
	l.dedup.WaitMerges()
	for _, r := range runFiles(t, fs) {
		assert.GreaterOrEqual(t, r[1], first, "runs wholly below the first offset are deleted")
	}
	require.NoError(t, l.Close())
}

// requireEveryIDFrom is requireEveryID for tx-from .. tx-(n-1).
func requireEveryIDFrom(t *testing.T, l *Log, from, n int, msg string) {
	t.Helper()
	ids := make([]string, n-from)
	for i := range ids {
		ids[i] = fmt.Sprintf("tx-%d", from+i)
	}
	got := map[int]uint64{}
	require.NoError(t, l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) { got[i] = off }))
	for i := range ids {
		require.Equalf(t, uint64(from+i+1), got[i], "%s: %s", msg, ids[i])
	}
}

// Runs that verify but were copied from another log (restored from elsewhere) would claim
// offsets as covered whose ids they lack: the newest run's newest entry must name the record
// at its offset, or every run is rebuilt from the segments.
func TestDedupRunsOfAnotherLogAreRebuilt(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 30, Options{})
	require.NoError(t, l.Close())
	other := vfs.NewMem()
	lo, _ := openMem(t, other, Options{})
	for i := 0; i < 30; i += 5 {
		_, err := lo.Append(int64(i), recs(1000+i, 5, 20)) // tx-1000.. at the same offsets
		require.NoError(t, err)
		_, _, _, err = lo.FindTransaction("load")
		require.NoError(t, err)
		lo.dedup.WaitMerges()
	}
	require.NoError(t, lo.Close())
	run := "/p/" + runName(1, 20)
	orig := fs.Bytes(run)
	fs.SetBytes(run, other.Bytes(run))
	var why string
	l, _ = openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
	requireEveryID(t, l, 30, "foreign run")
	assert.Equal(t, "dedup runs rebuilt from the segments: the newest names another transaction id than the record at its offset, so they do not describe this log; "+
		"dedup.idx rebuilt from the segments: its entries follow offset 20 but the dedup runs end at 0 (a run was lost)", why)
	l.dedup.WaitMerges()
	require.NoError(t, l.Close())
	assert.Equal(t, orig, fs.Bytes(run))
}

// OpenFrom (docs/format.md section 5 rule 5): runs that reach keepBelow or beyond are deleted,
// durably, with the dedup.idx entries there; what is below keepBelow is still found, the cut
// ids are not, and the records appended at the reused offsets are.
func TestOpenFromDeletesRunsPastKeepBelow(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 40, Options{})
	require.NoError(t, l.Close())
	require.Equal(t, [][2]uint64{{1, 20}, {21, 30}}, runFiles(t, fs))
	plan, err := planFrom(fs, "/p", 26)
	require.NoError(t, err)
	assert.Equal(t, 10+10, plan.DedupEntries, "dedup.idx 31..40 and the run 21..30 (counted whole)")
	l, rep, err := openLogFrom(fs, "/p", Options{}, 26)
	require.NoError(t, err)
	assert.Equal(t, 20, rep.Unsynced.DedupEntries)
	assert.Equal(t, [][2]uint64{{1, 20}}, runFiles(t, fs))
	assert.Equal(t, [][2]uint64{{1, 20}}, runFiles(t, fs.Crash(false)), "the deletion is durable")
	_, err = l.Append(25, recs(1000, 5, 20)) // tx-1000.. at 26..30
	require.NoError(t, err)
	requireEveryID(t, l, 25, "below keepBelow")
	var got []string
	require.NoError(t, l.FindTransactions([]string{"tx-25", "tx-35", "tx-1000", "tx-1004"}, func(i int, off uint64, _ [16]byte) {
		got = append(got, fmt.Sprintf("%d@%d", i, off))
	}))
	assert.ElementsMatch(t, []string{"2@26", "3@30"}, got)
	require.NoError(t, l.Close())
}

// Lookups running while appends seal and merge runs and retention trims and rewrites them
// always find every retained id published before the lookup started: no moment of a seal,
// merge, drop or rewrite loses one.
func TestDedupRunsConcurrentLookups(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	l := runLog(t, fs, 5, Options{MaxFileBytes: 2000})
	var published atomic.Int64
	published.Store(5)
	done := make(chan error, 1)
	go func() {
		for i := 5; i < 2000; i += 5 {
			if _, err := l.Append(int64(i), recs(i, 5, 20)); err != nil {
				done <- err
				return
			}
			published.Store(int64(i + 5))
			if i%100 == 0 && i > 600 {
				if _, _, err := l.DeleteFilesBefore(uint64(i - 600)); err != nil { // the appender's own retention, as the broker's
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		default:
		}
		n := int(published.Load())
		from := max(0, n-300)
		ids := make([]string, n-from)
		for i := range ids {
			ids[i] = fmt.Sprintf("tx-%d", from+i)
		}
		got := map[int]uint64{}
		require.NoError(t, l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) { got[i] = off }))
		first := l.FirstOffset() // read after: an id at or above it was retained all through the lookup
		for i := range ids {
			if off := uint64(from + i + 1); off >= first {
				require.Equalf(t, off, got[i], "while appending, %d published, first offset %d: %s", n, first, ids[i])
			}
		}
	}
	first := l.FirstOffset()
	require.Greater(t, first, uint64(1000), "retention ran")
	requireEveryIDFrom(t, l, int(first-1), 2000, "after")
	l.dedup.WaitMerges()
	runs := runFiles(t, fs)
	require.LessOrEqual(t, runs[0][0], first)
	requireRunsChain(t, fs, runs[0][0], l.dedup.Stats().RunsEnd)
	t.Logf("runs: %v", runFiles(t, fs))
	// Once no merge is due, run sizes (multiples of 10) strictly decrease from the oldest:
	// k runs hold at least 10·k(k+1)/2 ids, and about 700 are retained, so k ≤ 11.
	assert.LessOrEqual(t, len(l.dedup.Stats().RunCounts), 11, "merged in the background")
	require.NoError(t, l.Close())
}

// requireRunsChain checks that the run files cover first..last, each starting right after the
// one before it.
func requireRunsChain(t *testing.T, fs *vfs.Mem, first, last uint64) {
	t.Helper()
	next := first
	for _, r := range runFiles(t, fs) {
		require.Equalf(t, next, r[0], "runs %v", runFiles(t, fs))
		next = r[1] + 1
	}
	require.Equalf(t, last+1, next, "runs %v", runFiles(t, fs))
}

// Run files a lookup opened stay open (a false filter hit is one pread) and are counted in
// the HandleCache: each run read adds one handle, and Release and Close give them all back.
func TestDedupRunHandlesCounted(t *testing.T) {
	withRunEntries(t, 10)
	fs := vfs.NewMem()
	c := NewHandleCache(1000)
	l := runLog(t, fs, 30, Options{Handles: c})
	before := c.Stats().Open
	requireEveryID(t, l, 30, "every run read") // ids 1..20 are in the run: its file is read
	opened := l.dedup.Stats().RunFilesOpen
	require.Equal(t, 1, opened, "runs %v", runFiles(t, fs))
	assert.Equal(t, before+opened, c.Stats().Open)
	requireEveryID(t, l, 30, "read again")
	assert.Equal(t, before+opened, c.Stats().Open, "a second lookup reuses the handle")

	require.True(t, l.Release())
	assert.Equal(t, 0, c.Stats().Open)
	requireEveryID(t, l, 30, "after release")
	require.NoError(t, l.Close())
	assert.Equal(t, 0, c.Stats().Open)
}
