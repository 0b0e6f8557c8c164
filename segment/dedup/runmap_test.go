package dedup

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// osIndex makes an Index over src in a fresh directory on the real disk (vfs.OS: run files
// are mapped, runmap.go), loaded, with n records pushed after the load and the merges done.
// It returns the directory and what Config.Rebuilt heard.
func osIndex(t *testing.T, src *synthSource, runEntries, n int) (*Index, string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	var mu sync.Mutex
	var why []string
	x := &Index{}
	x.Init(Config{FS: vfs.OS, Dir: dir, Source: src, RunEntries: runEntries, Rebuilt: func(s string) {
		mu.Lock()
		defer mu.Unlock()
		why = append(why, s)
	}})
	x.SetOpenNext(src.NextOffset())
	t.Cleanup(func() { _ = x.Drop() })
	require.Empty(t, find(t, x, []string{"load"}))
	for i := 0; i < n; i += 50 {
		appendTo(x, src, min(50, n-i))
	}
	x.WaitMerges()
	return x, dir, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), why...) }
}

// requireExact checks that x finds every id of offsets 1..n at its offset, and no id never stored.
func requireExact(t *testing.T, x *Index, n int) {
	t.Helper()
	got := find(t, x, txids(1, uint64(n)))
	require.Len(t, got, n)
	for off := uint64(1); off <= uint64(n); off++ {
		require.Equal(t, off, got[txidAt(off)])
	}
	var fresh []string
	for i := range 2000 {
		fresh = append(fresh, "never-"+txidAt(uint64(i)))
	}
	require.Empty(t, find(t, x, fresh))
}

// largestRun returns the path of x's run file holding the most ids.
func largestRun(t *testing.T, x *Index, dir string) string {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	require.NotEmpty(t, x.runs)
	best := x.runs[0]
	for _, r := range x.runs {
		if r.hdr.Count > best.hdr.Count {
			best = r
		}
	}
	return filepath.Join(dir, best.name())
}

// On the real file system lookups read the runs through mappings: every id is found at its
// offset, none never stored is, and no run file handle stays open (a mapping holds none).
func TestMappedRunsAnswerEveryID(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x, _, why := osIndex(t, src, 64, 5000)
	requireExact(t, x, 5000)
	st := x.Stats()
	assert.Equal(t, len(st.RunCounts), st.RunsMapped, "every run was read, so mapped: %v", st.RunCounts)
	assert.Zero(t, st.RunFilesOpen)
	assert.Empty(t, why())

	// A release by the handle cache keeps the mappings (and answers).
	require.True(t, x.Park())
	assert.Equal(t, st.RunsMapped, x.Stats().RunsMapped)
	requireExact(t, x, 5000)
	// A drop unmaps; the next load maps again as lookups read.
	require.NoError(t, x.Drop())
	assert.Zero(t, x.Stats().RunsMapped)
	requireExact(t, x, 5000)
}

// A run file cut short behind its mapping faults on a touch past the new end: the lookup
// recovers, rebuilds the run from the segments and answers exactly (never a crash, never a
// missed id).
func TestMappedRunCutShortIsRebuilt(t *testing.T) {
	for _, cut := range []int64{0, index.RunHeaderSize + 3*index.RunPageSize + 100} {
		src := &synthSource{first: 1, next: 1}
		x, dir, why := osIndex(t, src, 64, 6000)
		requireExact(t, x, 6000) // maps and verifies the pages touched
		path := largestRun(t, x, dir)
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.Greater(t, st.Size(), cut+2*4096, "the cut leaves whole pages of the mapping past the end")
		require.NoError(t, os.Truncate(path, cut))
		requireExact(t, x, 6000)
		// The pread path, which the run falls back to only after a fault in its mapping,
		// finds the file short and rebuilds it.
		require.NotEmpty(t, why(), "cut at %d: reported", cut)
		assert.Contains(t, strings.Join(why(), "\n"), ": EOF")
		assert.Contains(t, strings.Join(why(), "\n"), "rebuilt from the segments")
	}
}

// A page damaged on disk before a lookup first touches it fails its check in the mapping: the
// run is rebuilt from the segments and every answer stays exact.
func TestMappedRunDamagedBeforeItsPageIsTouched(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x, dir, why := osIndex(t, src, 64, 6000)
	require.NoError(t, x.Drop()) // unmapped: the next load verifies the files, then lookups map them
	require.Len(t, find(t, x, []string{"load"}), 0)
	path := largestRun(t, x, dir)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[index.RunHeaderSize+index.RunPageSize+40] ^= 0x04 // page 1, an entry's hash
	require.NoError(t, os.WriteFile(path, b, 0o644))
	requireExact(t, x, 6000)
	assert.Contains(t, strings.Join(why(), "\n"), "page 1 check")
}

// A run file removed after the load is rebuilt from the segments by the lookup that would map
// it; one removed once mapped is still read through its mapping (the removed file's pages).
func TestMappedRunMissingFile(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	x, dir, why := osIndex(t, src, 64, 6000)
	require.NoError(t, x.Drop())
	require.Len(t, find(t, x, []string{"load"}), 0)
	path := largestRun(t, x, dir)
	require.NoError(t, os.Remove(path))
	requireExact(t, x, 6000)
	assert.Contains(t, strings.Join(why(), "\n"), "no such file")

	n := len(why())
	require.NoError(t, os.Remove(largestRun(t, x, dir))) // mapped by the lookups above
	requireExact(t, x, 6000)
	assert.Len(t, why(), n, "read through the mapping: nothing rebuilt")
}

// The mapped search (interpolated page and entry, run.go) finds exactly what the pread path
// finds, on runs whose hashes are uniform, clustered (defeating the interpolation) or equal
// across page boundaries.
func TestMappedCandidatesMatchThePreadPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	shapes := map[string]func(i int) uint64{
		"uniform":   func(int) uint64 { return rng.Uint64() },
		"clustered": func(int) uint64 { return 1<<40 + rng.Uint64N(1<<20) },
		"equal":     func(i int) uint64 { return []uint64{5, 1 << 63, 1<<63 + 1, ^uint64(0)}[i%4] },
		"mixed": func(i int) uint64 {
			if i%3 == 0 {
				return 42
			}
			return rng.Uint64()
		},
	}
	for name, hashAt := range shapes {
		t.Run(name, func(t *testing.T) {
			x := &Index{}
			x.Init(Config{FS: vfs.OS, Dir: t.TempDir(), Source: &synthSource{first: 1, next: 1}})
			const n = 2000
			entries := make([]index.RunEntry, n)
			for i := range entries {
				entries[i] = index.RunEntry{Hash: hashAt(i), Offset: uint64(10 + i)}
			}
			index.SortRunEntries(entries)
			mapped, err := x.writeRun(10, 10+n-1, entries)
			require.NoError(t, err)
			pread := *mapped
			pread.filter, pread.noMap = nil, true
			t.Cleanup(func() { x.closeRunsLocked(mapped, &pread) })
			probes := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1}
			for _, e := range entries {
				probes = append(probes, e.Hash, e.Hash-1, e.Hash+1)
			}
			for range 1000 {
				probes = append(probes, rng.Uint64())
			}
			for _, h := range probes {
				want, err := pread.candidates(x, h, nil)
				require.NoError(t, err)
				got, err := mapped.candidates(x, h, nil)
				require.NoError(t, err)
				require.Equal(t, want, got, "hash %x", h)
			}
			assert.NotNil(t, mapped.m, "read through the mapping")
			assert.Nil(t, pread.m)
		})
	}
}
