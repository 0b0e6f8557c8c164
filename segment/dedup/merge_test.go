package dedup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// pushRuns loads x empty, then appends n ids 10 at a time, waiting for the merges after
// each append (so the shapes are deterministic).
func pushRuns(t *testing.T, x *Index, src *synthSource, n int) {
	t.Helper()
	require.Empty(t, find(t, x, []string{"load"}))
	for i := 0; i < n; i += 10 {
		appendTo(x, src, 10)
		x.WaitMerges()
	}
}

// Issue 23: size-tiered merges take DefaultMergeFanout (4) runs of one tier at once, so each
// id is rewritten once a tier (log4 of the ids over RunEntries) instead of once a doubling;
// the runs still chain by offset and every id is found.
func TestTieredMergesRewriteEachIDOnceATier(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, vfs.NewMem(), src, 10)
	pushRuns(t, x, src, 170) // 161..170 in the table
	st := x.Stats()
	assert.Equal(t, [][2]uint64{{1, 160}}, st.RunRanges, "16 runs of 10: four of 40, then one of 160")
	assert.Equal(t, uint64(2*160), st.MergedEntries, "each id rewritten twice (the binary counter: 4 times)")

	for range 7 {
		appendTo(x, src, 10)
		x.WaitMerges()
	}
	st = x.Stats()
	assert.Equal(t, [][2]uint64{{1, 160}, {161, 200}, {201, 210}, {211, 220}, {221, 230}}, st.RunRanges, "231..240 in the table")
	require.Len(t, find(t, x, txids(1, 240)), 240)
	requireGlobalHoldsEveryRunID(t, x)
}

// Fanout 2 is the binary counter segment's tests predict: two neighbours merge while the
// older holds no more ids than the newer.
func TestFanoutTwoIsTheBinaryCounter(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := &Index{}
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("/p"))
	x.Init(Config{FS: fs, Dir: "/p", Source: src, RunEntries: 10, MergeFanout: 2})
	x.SetOpenNext(1)
	t.Cleanup(func() { _ = x.Drop() })
	pushRuns(t, x, src, 100)
	assert.Equal(t, [][2]uint64{{1, 80}, {81, 90}}, x.Stats().RunRanges, "91..100 in the table")
	require.Len(t, find(t, x, txids(1, 100)), 100)
}

// A run that retention shrank (the oldest, rewritten) is merged up with the newer runs of a
// higher tier rather than left behind, and the chain of runs has no gap.
func TestTieredMergesAfterRetention(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, vfs.NewMem(), src, 10)
	pushRuns(t, x, src, 200)
	src.mu.Lock()
	src.first = 150
	src.mu.Unlock()
	pushRuns(t, x, src, 400)
	st := x.Stats()
	next := uint64(150)
	for _, r := range st.RunRanges {
		require.LessOrEqual(t, r[0], next, "runs %v", st.RunRanges)
		next = r[1] + 1
	}
	require.Len(t, find(t, x, txids(150, 600)), 451)
	assert.Empty(t, find(t, x, txids(1, 149)))
	requireGlobalHoldsEveryRunID(t, x)
}

// A merge writes its run file under its own name (no rename): a crash mid-write leaves it
// torn next to the runs it was replacing. The load deletes it and takes those runs instead,
// reading none of their offsets from the segments, and every id is still found.
func TestLoadSkipsATornMergedRunForTheRunsItReplaced(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	fs := vfs.NewMem()
	x := newTestIndex(t, fs, src, 10)
	pushRuns(t, x, src, 40)
	require.Equal(t, [][2]uint64{{1, 10}, {11, 20}, {21, 30}}, x.Stats().RunRanges, "31..40 in the table")
	var merged []index.RunEntry
	for _, r := range [][2]uint64{{1, 10}, {11, 20}, {21, 30}} {
		_, e, err := x.readRun(r[0], r[1])
		require.NoError(t, err)
		merged = append(merged, e...)
	}
	index.SortRunEntries(merged) // the entries of the merged run
	whole := index.EncodeRun(1, 30, merged)
	require.NoError(t, x.Drop())

	for name, torn := range map[string][]byte{
		"cut":    whole[:len(whole)-100],
		"zeroed": append(append([]byte(nil), whole[:len(whole)-100]...), make([]byte, 100)...),
	} {
		fs.SetBytes("/p/"+runName(1, 30), torn)
		var why []string
		y := &Index{}
		y.Init(Config{FS: fs, Dir: "/p", Source: src, RunEntries: 10, Rebuilt: func(w string) { why = append(why, w) }})
		y.SetOpenNext(src.NextOffset())
		src.mu.Lock()
		src.froms = nil
		src.mu.Unlock()
		require.Empty(t, find(t, y, []string{"load"}), name)
		src.mu.Lock()
		for _, from := range src.froms {
			// 30: the load's check that the newest run names the record at its top offset.
			assert.GreaterOrEqual(t, from, uint64(30), "%s: the runs' offsets were read from the segments", name)
		}
		src.mu.Unlock()
		assert.Equal(t, [][2]uint64{{1, 10}, {11, 20}, {21, 30}}, y.Stats().RunRanges, name)
		require.Len(t, find(t, y, txids(1, 40)), 40, name)
		require.Len(t, why, 1, name)
		assert.Contains(t, why[0], runName(1, 30), name)
		ok, err := vfs.Exists(fs, "/p/"+runName(1, 30))
		require.NoError(t, err)
		assert.False(t, ok, "%s: the torn run is deleted", name)
		requireGlobalHoldsEveryRunID(t, y)
		require.NoError(t, y.Drop())
	}
}

// A merge streams its inputs: a page of one that fails its check after the merged file was
// partly written fails the merge, removes that partial file and swaps nothing; the damaged run
// is then rebuilt from the segments by the lookup that reads the page, and every id is found.
func TestMergeOfADamagedRunWritesNothing(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	fs := vfs.NewMem()
	x := newTestIndex(t, fs, src, 600) // 3 pages a run
	pushRuns(t, x, src, 3*600+10)
	require.Equal(t, [][2]uint64{{1, 600}, {601, 1200}, {1201, 1800}}, x.Stats().RunRanges)
	name := "/p/" + runName(601, 1200)
	b := fs.Bytes(name)
	at, _ := index.RunHeader{Count: 600}.Page(2)
	b[at+5] ^= 0x10 // the last page of the second run
	fs.SetBytes(name, b)

	// The fourth seal makes four runs of one tier: their merge reads the damaged page last.
	appendTo(x, src, 600)
	x.WaitMerges()
	st := x.Stats()
	assert.Equal(t, [][2]uint64{{1, 600}, {601, 1200}, {1201, 1800}, {1801, 1810}}, st.RunRanges, "nothing swapped")
	ok, err := vfs.Exists(fs, "/p/"+runName(1, 1810))
	require.NoError(t, err)
	assert.False(t, ok, "the partial merged file is removed")
	ok, err = vfs.Exists(fs, "/p/"+runName(1, 1810)+".tmp")
	require.NoError(t, err)
	assert.False(t, ok)
	require.Len(t, find(t, x, txids(1, 2410)), 2410)
}
