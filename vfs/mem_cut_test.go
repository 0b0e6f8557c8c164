package vfs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

const cutSeeds = 200

func openW(t *testing.T, fsys FS, name string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE)
	require.NoError(t, err)
	return f
}

// Synced bytes always survive a cut; what follows them is, byte by byte,
// the written byte or zero, and over many cuts every shape appears: nothing
// kept, everything kept, and a kept size with zeros inside (a page not
// written back, or written back before the rest of it was written).
func TestPowerCutKeepsSyncedBytesAndSomeOfTheRest(t *testing.T) {
	m := NewStrictMem("/d")
	synced := bytes.Repeat([]byte("s"), 5000)
	unsynced := bytes.Repeat([]byte("u"), 3*CutPage)
	f := openW(t, m, "/d/f")
	_, err := f.WriteAt(synced, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.WriteAt(unsynced, int64(len(synced)))
	require.NoError(t, err)
	cur := m.Bytes("/d/f")

	var none, all, holes int
	for seed := range uint64(cutSeeds) {
		got := m.PowerCut(seed).Bytes("/d/f")
		require.GreaterOrEqualf(t, len(got), len(synced), "seed %d", seed)
		require.LessOrEqualf(t, len(got), len(cur), "seed %d", seed)
		require.Equalf(t, synced, got[:len(synced)], "seed %d: synced bytes changed", seed)
		zeros := 0
		for i := len(synced); i < len(got); i++ {
			switch got[i] {
			case 'u':
			case 0:
				zeros++
			default:
				t.Fatalf("seed %d: byte %d is %q, neither written nor zero", seed, i, got[i])
			}
		}
		switch {
		case len(got) == len(synced):
			none++
		case bytes.Equal(got, cur):
			all++
		case zeros > 0:
			holes++
		}
	}
	require.Positive(t, none, "a cut that kept nothing unsynced")
	require.Positive(t, all, "a cut that kept everything")
	require.Positive(t, holes, "a cut that kept the size but not every page")
}

// The same seed and history give the same state.
func TestPowerCutIsReproducibleBySeed(t *testing.T) {
	m := NewStrictMem("/d")
	f := openW(t, m, "/d/f")
	_, err := f.WriteAt(bytes.Repeat([]byte("x"), 10*CutPage+7), 0)
	require.NoError(t, err)
	for seed := range uint64(20) {
		a, b := m.PowerCut(seed), m.PowerCut(seed)
		require.Equal(t, a.Bytes("/d/f"), b.Bytes("/d/f"))
	}
}

// An unsynced truncate may be undone by a cut, an unsynced overwrite of
// synced bytes may be kept page by page: each page old or new.
func TestPowerCutUndoesTruncatesAndMixesOverwrites(t *testing.T) {
	m := NewStrictMem("/d")
	f := openW(t, m, "/d/f")
	old := bytes.Repeat([]byte("o"), 4*CutPage)
	_, err := f.WriteAt(old, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, f.Truncate(10))
	undone := 0
	for seed := range uint64(cutSeeds) {
		got := m.PowerCut(seed).Bytes("/d/f")
		require.Truef(t, len(got) == 10 || len(got)%CutPage == 0, "seed %d: size %d", seed, len(got))
		require.Equal(t, old[:len(got)], got, "seed %d: a truncate writes nothing", seed)
		if len(got) == len(old) {
			undone++
		}
	}
	require.Positive(t, undone)

	_, err = f.WriteAt(old, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.WriteAt(bytes.Repeat([]byte("n"), len(old)), 0)
	require.NoError(t, err)
	mixed := 0
	for seed := range uint64(cutSeeds) {
		got := m.PowerCut(seed).Bytes("/d/f")
		require.Len(t, got, len(old))
		require.Emptyf(t, bytes.Trim(got, "on"), "seed %d: a byte neither old nor new", seed)
		if bytes.Contains(got, []byte("o")) && bytes.Contains(got, []byte("n")) {
			mixed++
		}
	}
	require.Positive(t, mixed, "a cut with old and new pages")
}

// Names not made durable by a SyncDir may survive or not, in the order they
// were made; a rename is never half kept; a SyncDir makes them certain.
func TestPowerCutKeepsAPrefixOfUnsyncedNames(t *testing.T) {
	m := NewStrictMem("/d")
	for _, n := range []string{"a", "b", "c"} {
		require.NoError(t, openW(t, m, "/d/"+n).Close())
	}
	seen := map[string]int{}
	for seed := range uint64(cutSeeds) {
		names, err := m.PowerCut(seed).List("/d")
		require.NoError(t, err)
		key := fmt.Sprint(names)
		require.Contains(t, []string{"[]", "[a]", "[a b]", "[a b c]"}, key, "seed %d: not a prefix of the creates", seed)
		seen[key]++
	}
	require.Len(t, seen, 4, "every prefix occurs: %v", seen)

	require.NoError(t, m.SyncDir("/d"))
	require.NoError(t, m.Rename("/d/a", "/d/z"))
	require.NoError(t, m.Remove("/d/b"))
	kept := map[string]int{}
	for seed := range uint64(cutSeeds) {
		names, err := m.PowerCut(seed).List("/d")
		require.NoError(t, err)
		key := fmt.Sprint(names)
		require.Contains(t, []string{"[a b c]", "[b c z]", "[c z]"}, key, "seed %d", seed)
		kept[key]++
	}
	require.Len(t, kept, 3, "the rename and the removal each kept or lost: %v", kept)

	require.NoError(t, m.SyncDir("/d"))
	for seed := range uint64(20) {
		names, err := m.PowerCut(seed).List("/d")
		require.NoError(t, err)
		require.Equal(t, []string{"c", "z"}, names)
	}
}

// A directory whose own entry is lost takes everything under it, however
// well its files were synced.
func TestPowerCutLostDirectoryTakesItsFiles(t *testing.T) {
	m := NewStrictMem("/d")
	require.NoError(t, m.Mkdir("/d/p"))
	f := openW(t, m, "/d/p/f")
	_, err := f.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("/d/p"))
	lost, kept := 0, 0
	for seed := range uint64(cutSeeds) {
		c := m.PowerCut(seed)
		if _, err := c.List("/d/p"); err != nil {
			lost++
			require.Nil(t, c.Bytes("/d/p/f"))
			continue
		}
		kept++
		require.Equal(t, "x", string(c.Bytes("/d/p/f")))
	}
	require.Positive(t, lost)
	require.Positive(t, kept)
}

// A mapped file comes back as of its last Map (pages written back), with
// pages zeroed, or as its last Sync left it: never with bytes written through
// the view after that Map, which a cut does not read.
func TestPowerCutMappedFileIsOfItsLastMapAtBest(t *testing.T) {
	m := NewStrictMem("/d")
	mp, err := m.OpenMapped("/d/idx")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	v, err := mp.Map(2 * CutPage)
	require.NoError(t, err)
	copy(v, bytes.Repeat([]byte("a"), len(v)))
	v, err = mp.Map(3 * CutPage) // the remap is a write-back point
	require.NoError(t, err)
	copy(v, bytes.Repeat([]byte("b"), len(v))) // after it: never in a cut
	shapes := map[string]int{}
	for seed := range uint64(cutSeeds) {
		got := m.PowerCut(seed).Bytes("/d/idx")
		require.NotContains(t, string(got), "b", "seed %d", seed)
		switch {
		case len(got) == 0:
			shapes["empty"]++
		case bytes.Equal(got[:2*CutPage], bytes.Repeat([]byte("a"), 2*CutPage)):
			shapes["back"]++
		default:
			shapes["mixed"]++
		}
	}
	require.Len(t, shapes, 3, "%v", shapes)
	require.NoError(t, mp.Close())
}

// With SetSyncFSNoop a SyncFS makes nothing durable: a cut may lose all of
// it; a per-file Sync still counts.
func TestPowerCutAfterNoopSyncFSLosesWhatOnlySyncFSCovered(t *testing.T) {
	m := NewStrictMem("/d")
	m.SetSyncFSNoop(true)
	f := openW(t, m, "/d/f")
	require.NoError(t, m.SyncDir("/d"))
	_, err := f.Write([]byte("data"))
	require.NoError(t, err)
	require.NoError(t, m.SyncFS("/d"))
	lost := 0
	for seed := range uint64(cutSeeds) {
		if len(m.PowerCut(seed).Bytes("/d/f")) == 0 {
			lost++
		}
	}
	require.Positive(t, lost)
	require.NoError(t, f.Sync())
	for seed := range uint64(20) {
		require.Equal(t, "data", string(m.PowerCut(seed).Bytes("/d/f")))
	}
}

// A cut is one instant while another goroutine writes: a writer that syncs
// record k to file a and only then records k in file b (synced) never leaves
// a cut whose b says more than a holds.
func TestPowerCutIsOneInstant(t *testing.T) {
	m := NewStrictMem("/d")
	a, b := openW(t, m, "/d/a"), openW(t, m, "/d/b")
	require.NoError(t, m.SyncDir("/d"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var rec [8]byte
		for k := uint64(1); ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			binary.LittleEndian.PutUint64(rec[:], k)
			if _, err := a.WriteAt(rec[:], int64(k-1)*8); err != nil || a.Sync() != nil {
				t.Error("writing a:", err)
				return
			}
			if _, err := b.WriteAt(rec[:], 0); err != nil || b.Sync() != nil {
				t.Error("writing b:", err)
				return
			}
		}
	}()
	for seed := range uint64(cutSeeds) {
		c := m.PowerCut(seed)
		bb := c.Bytes("/d/b")
		if len(bb) < 8 {
			continue
		}
		k := binary.LittleEndian.Uint64(bb)
		require.GreaterOrEqualf(t, int64(len(c.Bytes("/d/a"))), int64(k*8), "seed %d: b says %d records", seed, k)
	}
	close(stop)
	wg.Wait()
}
