package dedup

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

func hashOf(txid string) uint64 { return index.HashTxn(txid) }

func txids(from, to uint64) []string {
	var ids []string
	for off := from; off <= to; off++ {
		ids = append(ids, txidAt(off))
	}
	return ids
}

// Queen's scope: every retained record's id is found, at its offset, whether it sits in a
// sealed run (loaded from the source) or in the active table (appended after the load);
// ids never stored are not (docs/format.md 4: every hash match is verified).
func TestFindAnswersEveryRetainedID(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	src.push(1000)
	x := newTestIndex(t, vfs.NewMem(), src, 64)
	got := find(t, x, txids(1, 1000))
	require.Len(t, got, 1000)
	for off := uint64(1); off <= 1000; off++ {
		require.Equal(t, off, got[txidAt(off)])
	}
	x.WaitMerges()
	st := x.Stats()
	assert.Equal(t, uint64(1000/64*64), st.RunsEnd, "sealed every 64 ids")
	assert.Equal(t, 1000%64, st.TableLen)

	appendTo(x, src, 100)
	got = find(t, x, txids(995, 1100))
	assert.Len(t, got, 106)
	assert.Equal(t, uint64(1100), got[txidAt(1100)])

	var fresh []string
	for i := range 500 {
		fresh = append(fresh, fmt.Sprintf("new-%d", i))
	}
	assert.Empty(t, find(t, x, fresh), "no filter false positive answers")
}

// A candidate whose record is gone from the source (a quarantined range after the load)
// matches nothing, and the candidates after the gap are still verified by the same read.
func TestFindSkipsCandidatesInAGap(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	src.push(300)
	x := newTestIndex(t, vfs.NewMem(), src, 1000) // all in the table
	require.Len(t, find(t, x, txids(1, 300)), 300)
	src.mu.Lock()
	src.gaps = [][2]uint64{{101, 150}}
	reads := src.reads
	src.mu.Unlock()
	got := find(t, x, txids(90, 160))
	assert.Len(t, got, 11+10)
	assert.Equal(t, reads+1, src.reads, "one read verifies the candidates on both sides of the gap")
	for off := uint64(101); off <= 150; off++ {
		assert.NotContains(t, got, txidAt(off))
	}
	assert.Equal(t, uint64(160), got[txidAt(160)])
}

// Retention: ids below the first retained offset are no longer answered.
func TestFindFollowsRetention(t *testing.T) {
	src := &synthSource{first: 1, next: 1}
	src.push(500)
	x := newTestIndex(t, vfs.NewMem(), src, 32)
	require.Len(t, find(t, x, txids(1, 500)), 500)
	src.mu.Lock()
	src.first = 301
	src.mu.Unlock()
	got := find(t, x, txids(1, 500))
	assert.Len(t, got, 200)
	assert.NotContains(t, got, txidAt(300))
	x.WaitMerges()
	for _, r := range x.Stats().RunRanges {
		assert.GreaterOrEqual(t, r[1], uint64(301), "runs wholly below the first offset are dropped")
	}
}

// A failed read of the source fails the load (wrapped with the directory), and a later
// lookup loads again.
func TestLoadFailureIsReportedAndRetried(t *testing.T) {
	src := &synthSource{first: 1, next: 1, failAt: 50}
	src.push(100)
	x := newTestIndex(t, vfs.NewMem(), src, 1000)
	err := x.Find([]string{"tx-1"}, nil, func(int, uint64, [16]byte) {})
	require.ErrorContains(t, err, "segment log /p: dedup index: synthetic read failure at offset 50")
	assert.False(t, x.Stats().Loaded)
	src.mu.Lock()
	src.failAt = 0
	src.mu.Unlock()
	assert.Len(t, find(t, x, txids(1, 100)), 100)
}

// CheckRun is the run decoder fsck shares with the load: a run whose name disagrees with its
// header fails (docs/format.md 4.2), as does any flipped bit.
func TestCheckRun(t *testing.T) {
	var entries []index.RunEntry
	for off := uint64(10); off < 30; off++ {
		entries = append(entries, index.RunEntry{Hash: hashOf(txidAt(off)), Offset: off})
	}
	index.SortRunEntries(entries)
	b := index.EncodeRun(10, 29, entries)
	var got []index.RunEntry
	h, err := CheckRun(b, 10, 29, func(e index.RunEntry) { got = append(got, e) })
	require.NoError(t, err)
	assert.Equal(t, 20, h.Count)
	assert.Equal(t, entries, got)

	_, err = CheckRun(b, 10, 30, nil)
	require.ErrorIs(t, err, index.ErrRun)
	assert.ErrorContains(t, err, "header says offsets 10..29, the name 10..30")

	for bit := 0; bit < 8*len(b); bit += 7 {
		c := append([]byte(nil), b...)
		c[bit/8] ^= 1 << (bit % 8)
		_, err := CheckRun(c, 10, 29, nil)
		require.ErrorIs(t, err, index.ErrRun, "bit %d", bit)
	}
}

func TestParseRunName(t *testing.T) {
	first, last, ok := ParseRunName(index.RunFileName(7, 99))
	require.True(t, ok)
	assert.Equal(t, [2]uint64{7, 99}, [2]uint64{first, last})
	_, _, ok = ParseRunName(index.RunFileName(7, 99) + ".tmp")
	assert.False(t, ok)
}

// FuzzCheckRun: any bytes under any name give a verdict, never a panic, and entries only
// from a file that verifies in whole.
func FuzzCheckRun(f *testing.F) {
	entries := []index.RunEntry{{Hash: 5, Offset: 1}, {Hash: 9, Offset: 2}}
	f.Add(index.EncodeRun(1, 2, entries), uint64(1), uint64(2))
	f.Add([]byte("CMBR"), uint64(1), uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, first, last uint64) {
		n := 0
		h, err := CheckRun(b, first, last, func(index.RunEntry) { n++ })
		if err == nil {
			require.Equal(t, h.Count, n)
			require.Equal(t, [2]uint64{first, last}, [2]uint64{h.First, h.Last})
		}
	})
}
