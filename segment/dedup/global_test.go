package dedup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// requireGlobalHoldsEveryRunID checks global.go's invariant: every entry of every run in
// memory is in the partition's filter (a missing one would answer a duplicate as new).
func requireGlobalHoldsEveryRunID(t *testing.T, x *Index) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.runs) == 0 {
		return
	}
	require.NotNil(t, x.global)
	for _, r := range x.runs {
		_, entries, err := x.readRun(r.hdr.First, r.hdr.Last)
		require.NoError(t, err)
		for _, e := range entries {
			require.True(t, x.global.MayContain(e.Hash), "run %s: offset %d", r.name(), e.Offset)
		}
	}
}

// A partition that grows past its filter's size gets it rebuilt in the background, larger,
// and no id of any run is ever missing from it: every id stays found throughout.
func TestGlobalFilterGrowsAndHoldsEveryRunID(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, vfs.NewMem(), src, 16)
	require.Empty(t, find(t, x, []string{"load"}))
	caps := map[int]bool{}
	for i := 0; i < 3000; i += 10 {
		appendTo(x, src, 10)
		x.WaitMerges() // the rebuilds keep up with the seals: the sizes seen are deterministic
		if i%500 == 0 {
			require.Len(t, find(t, x, txids(1, uint64(i+10))), i+10)
		}
		x.mu.Lock()
		caps[x.globalCap] = true
		x.mu.Unlock()
	}
	x.WaitMerges()
	requireGlobalHoldsEveryRunID(t, x)
	assert.Greater(t, len(caps), 3, "rebuilt larger as the partition grew: %v", caps)
	x.mu.Lock()
	live, capacity := x.runsEntriesLocked(), x.globalCap
	x.mu.Unlock()
	assert.LessOrEqual(t, live, capacity+16, "sized for the runs' ids")
	require.Len(t, find(t, x, txids(1, 3000)), 3000)
}

// Ids sealed while a rebuild reads the run files are given to the rebuilt filter too (the
// rebuild's steps run here one by one, as the job goroutine runs them).
func TestGlobalRebuildKeepsIDsSealedMeanwhile(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, vfs.NewMem(), src, 16)
	require.Empty(t, find(t, x, []string{"load"}))
	for range 10 {
		appendTo(x, src, 16)
	}
	x.WaitMerges()
	x.mu.Lock()
	x.rebuilding, x.rebuildPending = true, nil
	runs := append([]*dedupRun(nil), x.runs...)
	x.mu.Unlock()
	f, capacity, ids, err := x.rebuildGlobal(runs)
	require.NoError(t, err)
	for range 3 {
		appendTo(x, src, 16) // sealed after the snapshot: only in the pending list
	}
	x.WaitMerges()
	x.mu.Lock()
	require.NotEmpty(t, x.rebuildPending)
	x.swapGlobalLocked(f, capacity, ids)
	x.mu.Unlock()
	requireGlobalHoldsEveryRunID(t, x)
	require.Len(t, find(t, x, txids(1, 13*16)), 13*16)
}

// A run file that fails its check does not fail the rebuild: that run's ids come from the
// source instead, so the new filter holds every id (a failed rebuild would stop the job loop,
// and with it every merge, while the filter overfilled). The lookup that reads the damaged page
// then rebuilds the run itself.
func TestGlobalRebuildReadsADamagedRunFromTheSource(t *testing.T) {
	fs := vfs.NewMem()
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, fs, src, 16)
	require.Empty(t, find(t, x, []string{"load"}))
	for range 4 {
		appendTo(x, src, 16)
	}
	x.WaitMerges()
	x.mu.Lock()
	old := x.global
	runs := append([]*dedupRun(nil), x.runs...)
	x.mu.Unlock()
	name := "/p/" + runs[0].name()
	b := append([]byte(nil), fs.Bytes(name)...)
	b[index.RunHeaderSize+3] ^= 0x10
	fs.SetBytes(name, b)
	f, _, ids, err := x.rebuildGlobal(runs)
	require.NoError(t, err)
	sealed := runs[len(runs)-1].hdr.Last // the rest is in the table, not in a run
	assert.Equal(t, int(sealed), ids)
	for _, id := range txids(1, sealed) {
		require.True(t, f.MayContain(hashOf(id)), "%s is missing from the rebuilt filter", id)
	}
	x.mu.Lock()
	assert.Same(t, old, x.global, "rebuildGlobal builds; only swapGlobalLocked puts it in place")
	x.mu.Unlock()
	closeRunFiles(x)
	require.Len(t, find(t, x, txids(1, 64)), 64, "the damaged run is rebuilt by the lookup")
	requireGlobalHoldsEveryRunID(t, x)
}

// closeRunFiles closes the run files lookups keep open, so the next page read opens the file
// by name again.
func closeRunFiles(x *Index) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closeRunsLocked(x.runs...)
}

// The load builds the partition's filter from the run files it verifies.
func TestLoadBuildsTheGlobalFilterFromTheRuns(t *testing.T) {
	fs := vfs.NewMem()
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, fs, src, 16)
	require.Empty(t, find(t, x, []string{"load"}))
	for range 20 {
		appendTo(x, src, 16)
	}
	x.WaitMerges()
	require.NoError(t, x.Drop())
	assert.Nil(t, x.global)
	require.Len(t, find(t, x, txids(1, 320)), 320)
	assert.Equal(t, 2, x.Stats().Loads)
	requireGlobalHoldsEveryRunID(t, x)
}

// runsEntriesLocked is how many entries the runs in memory hold.
func (d *Index) runsEntriesLocked() int {
	n := 0
	for _, r := range d.runs {
		n += r.hdr.Count
	}
	return n
}

// Issue 23: a rebuilt filter has room for globalHeadroomRuns more runs, so a small partition
// (where 1.2 times its ids is less than one seal adds) is not rebuilt from every run file on
// every seal: 24 seals of 16 ids rebuild it at most once every 4 seals.
func TestGlobalFilterHasRoomForRunsMore(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x := newTestIndex(t, vfs.NewMem(), src, 16)
	require.Empty(t, find(t, x, []string{"load"}))
	caps := map[int]bool{}
	for i := 0; i < 24*16; i += 16 {
		appendTo(x, src, 16)
		x.WaitMerges()
		x.mu.Lock()
		if x.global != nil {
			caps[x.globalCap] = true
			assert.GreaterOrEqual(t, x.globalCap, globalHeadroomRuns*16)
		}
		x.mu.Unlock()
	}
	assert.LessOrEqual(t, len(caps), 24/globalHeadroomRuns+1, "capacities %v", caps)
	requireGlobalHoldsEveryRunID(t, x)
	require.Len(t, find(t, x, txids(1, 24*16)), 24*16)
}
