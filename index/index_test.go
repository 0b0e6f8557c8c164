package index

import (
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memBacking is an in-memory Backing.
type memBacking struct{ b []byte }

func (m *memBacking) Size() (int64, error) { return int64(len(m.b)), nil }
func (m *memBacking) Map(size int64) ([]byte, error) {
	nb := make([]byte, size)
	copy(nb, m.b)
	m.b = nb
	return nb, nil
}
func (m *memBacking) Close() error { return nil }

// entries: segments of 4 records at ts 100, 200, 200, 300 in a file starting at 11.
func sample() []Entry {
	return []Entry{
		{Base: 11, Pos: 0, TimestampMicros: 100, Count: 4},
		{Base: 15, Pos: 500, TimestampMicros: 200, Count: 4},
		{Base: 19, Pos: 1000, TimestampMicros: 200, Count: 4},
		{Base: 23, Pos: 1500, TimestampMicros: 300, Count: 4},
	}
}

func build(t *testing.T, es []Entry) *memBacking {
	back := &memBacking{}
	f, repaired, err := Load(back, 11)
	require.NoError(t, err)
	assert.True(t, repaired, "a new, empty index is to be built")
	for _, e := range es {
		require.NoError(t, f.Append(e))
	}
	return back
}

func TestEntryRoundTrip(t *testing.T) {
	var b [EntrySize]byte
	e := Entry{Base: 1 << 40, Pos: 123456789, TimestampMicros: -5, Count: 7}
	PutEntry(b[:], e)
	got, ok := DecodeEntry(b[:])
	require.True(t, ok)
	assert.Equal(t, e, got)
	b[3] ^= 1
	_, ok = DecodeEntry(b[:])
	assert.False(t, ok, "a flipped bit fails the check")
	_, ok = DecodeEntry(make([]byte, EntrySize))
	assert.False(t, ok, "zeros are no entry")
}

func TestSearch(t *testing.T) {
	back := build(t, sample())
	f, repaired, err := Load(back, 11)
	require.NoError(t, err)
	require.False(t, repaired)
	es := f.Entries()
	require.Equal(t, 4, es.Len())
	for _, c := range []struct {
		name string
		off  uint64
		want int
	}{{"before the first", 10, -1}, {"first offset", 11, 0}, {"inside", 17, 1}, {"last of a segment", 22, 2},
		{"last offset", 26, 3}, {"after the last", 27, -1}} {
		assert.Equal(t, c.want, es.FindOffset(c.off), c.name)
	}
	for _, c := range []struct {
		name string
		ts   int64
		want int
	}{{"before", 50, 0}, {"at first", 100, 0}, {"between", 150, 1}, {"shared timestamp: first of them", 200, 1},
		{"after shared", 201, 3}, {"at last", 300, 3}, {"after all", 301, 4}} {
		assert.Equal(t, c.want, es.FirstAtOrAfterTime(c.ts), c.name)
	}
}

func TestLoadKeepsTheValidPrefix(t *testing.T) {
	cases := []struct {
		name         string
		damage       func(b []byte) []byte
		wantN        int
		wantRepaired bool
	}{
		{"intact", func(b []byte) []byte { return b }, 4, false},
		{"torn last entry", func(b []byte) []byte { return b[:HeaderSize+3*EntrySize+5] }, 3, true},
		{"garbage in entry 2", func(b []byte) []byte { b[HeaderSize+2*EntrySize+1] ^= 9; return b }, 2, true},
		{"entry not following its predecessor", func(b []byte) []byte {
			PutEntry(b[HeaderSize+EntrySize:], Entry{Base: 16, Pos: 500, TimestampMicros: 200, Count: 4})
			return b
		}, 1, true},
		{"timestamp going backwards", func(b []byte) []byte {
			PutEntry(b[HeaderSize+EntrySize:], Entry{Base: 15, Pos: 500, TimestampMicros: 99, Count: 4})
			return b
		}, 1, true},
		{"header of another file", func(b []byte) []byte { b[8] = 12; return b }, 0, true},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0, true},
		{"empty file", func([]byte) []byte { return nil }, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			back := build(t, sample())
			back.b = c.damage(back.b[:HeaderSize+4*EntrySize])
			f, repaired, err := Load(back, 11)
			require.NoError(t, err)
			assert.Equal(t, c.wantN, f.Len())
			assert.Equal(t, c.wantRepaired, repaired)
			for i := 0; i < f.Len(); i++ {
				assert.Equal(t, sample()[i], f.Entries().At(i))
			}
			// Appending continues after the prefix.
			if f.Len() < 4 {
				require.NoError(t, f.Append(sample()[f.Len()]))
			}
			require.NoError(t, f.Close(true))
		})
	}
}

func TestAppendGrowsAndCloseShrinks(t *testing.T) {
	back := &memBacking{}
	f, _, err := Load(back, 1)
	require.NoError(t, err)
	for i := 0; i < 1000; i++ {
		require.NoError(t, f.Append(Entry{Base: uint64(1 + i), Pos: int64(i * 10), TimestampMicros: int64(i), Count: 1}))
	}
	require.NoError(t, f.Close(true))
	assert.Len(t, back.b, HeaderSize+1000*EntrySize)
	f, _, err = Load(back, 1)
	require.NoError(t, err)
	assert.Equal(t, 1000, f.Len())
	f.Truncate(10)
	assert.Equal(t, 10, f.Len())
	last, ok := f.Last()
	require.True(t, ok)
	assert.Equal(t, uint64(10), last.Base)
}

func TestOSBackingRoundTrip(t *testing.T) {
	path := t.TempDir() + "/1.idx"
	back, err := vfs.OS.OpenMapped(path)
	require.NoError(t, err)
	f, _, err := Load(back, 11)
	require.NoError(t, err)
	for _, e := range sample() {
		require.NoError(t, f.Append(e))
	}
	require.NoError(t, f.Close(true))
	back, err = vfs.OS.OpenMapped(path)
	require.NoError(t, err)
	f, repaired, err := Load(back, 11)
	require.NoError(t, err)
	assert.False(t, repaired)
	assert.Equal(t, 4, f.Len())
	require.NoError(t, f.Close(false))
}

func TestTableCollisionsAndDuplicates(t *testing.T) {
	var tb Table
	for i := uint64(1); i <= 10000; i++ {
		tb.Insert(i*2654435761, i)
	}
	tb.Insert(42*2654435761, 99999) // same hash again (a collision or a duplicate id)
	tb.Insert(0, 7)                 // hash 0 is storable
	assert.Equal(t, 10002, tb.Len())
	var got []uint64
	tb.Lookup(42*2654435761, func(off uint64) bool { got = append(got, off); return true })
	assert.ElementsMatch(t, []uint64{42, 99999}, got)
	got = nil
	tb.Lookup(0, func(off uint64) bool { got = append(got, off); return true })
	assert.Contains(t, got, uint64(7))
	got = nil
	tb.Lookup(12345, func(off uint64) bool { got = append(got, off); return true })
	assert.Empty(t, got)
	assert.LessOrEqual(t, tb.Bytes(), 16*32768, "16 bytes a slot, load ≤ 3/4")
}

func TestTablePrefetchChangesNothing(t *testing.T) {
	var tb Table
	tb.Prefetch([]uint64{1, 2, 3}) // empty table: no slots to touch
	for i := uint64(1); i <= 100; i++ {
		tb.Insert(i*0x9e3779b97f4a7c15, i)
	}
	tb.Prefetch([]uint64{0x9e3779b97f4a7c15, 42, 0})
	var got []uint64
	tb.Lookup(0x9e3779b97f4a7c15, func(off uint64) bool { got = append(got, off); return true })
	require.Equal(t, []uint64{1}, got)
	require.Equal(t, 100, tb.Len())
}

func TestTableReserveMakesRoomWithoutLosingEntries(t *testing.T) {
	var tb Table
	for i := uint64(1); i <= 10; i++ {
		tb.Insert(i, i*10)
	}
	tb.Reserve(1000)
	slots := len(tb.keys)
	require.GreaterOrEqual(t, slots*3, (10+1000)*4, "load factor stays ≤ 3/4 after the reserved inserts")
	for i := uint64(11); i <= 1010; i++ {
		tb.Insert(i, i*10)
	}
	require.Equal(t, slots, len(tb.keys), "no growth while filling what was reserved")
	for i := uint64(1); i <= 1010; i++ {
		var got []uint64
		tb.Lookup(i, func(off uint64) bool { got = append(got, off); return true })
		require.Equal(t, []uint64{i * 10}, got)
	}
}

func TestTableGrowsIncrementallyAndLooksUpThroughTheMove(t *testing.T) {
	// Inserts (with repeated hashes, and hash 0) interleaved with lookups across many
	// doublings: every Lookup sees exactly the offsets stored under its hash, whether they still
	// sit in the old table or were moved.
	var tb Table
	want := map[uint64][]uint64{}
	sawMove := false
	for i := uint64(1); i <= 20000; i++ {
		h := (i * 0x9e3779b97f4a7c15) % 7919 // many repeats
		if i%1000 == 0 {
			h = 0
		}
		migBefore, moving := tb.mig, tb.oldK != nil
		tb.Insert(h, i)
		if moving && tb.oldK != nil {
			sawMove = true
			require.LessOrEqual(t, tb.mig-migBefore, migrateStep, "one Insert moves at most migrateStep slots")
		}
		want[h] = append(want[h], i)
		if i%97 == 0 || tb.oldK != nil && i%7 == 0 {
			for _, probe := range []uint64{h, (i * 31) % 7919, 0, 123456789} {
				var got []uint64
				tb.Lookup(probe, func(off uint64) bool { got = append(got, off); return true })
				require.ElementsMatch(t, want[probe], got, "hash %d after %d inserts", probe, i)
			}
		}
		require.Equal(t, int(i), tb.Len())
	}
	require.True(t, sawMove, "the test exercised lookups during a move")
}

func TestTableLookupStopsWhenFnSaysSo(t *testing.T) {
	var tb Table
	for i := uint64(1); i <= 50; i++ {
		tb.Insert(7, i)
	}
	calls := 0
	tb.Lookup(7, func(uint64) bool { calls++; return calls < 3 })
	require.Equal(t, 3, calls)
}
