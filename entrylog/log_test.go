package entrylog

import (
	"fmt"
	"testing"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

// Segments of interleaved partitions read back exactly, before and after a
// Sync, a Close and a reopen (the index rebuilt by scanning).
func TestAppendReadReopen(t *testing.T) {
	fs := vfs.NewMem()
	l, rep := openMem(t, fs, Options{})
	require.Equal(t, 0, rep.Files)
	gens := []*segs{newSegs(t, "a"), newSegs(t, "b"), newSegs(t, "c")}
	for round := 0; round < 4; round++ {
		for i, g := range gens {
			_, err := l.Append(pid(i), g.next(3))
			require.NoError(t, err)
		}
	}
	for i, g := range gens {
		require.Equal(t, uint64(13), readAllOf(t, l, pid(i), g.tag, 3))
		require.Equal(t, uint64(13), l.Next(pid(i)))
	}
	require.NoError(t, l.Sync())
	st := l.Stats()
	require.Equal(t, 1, st.Files)
	require.Equal(t, 3, st.Partitions)
	require.Equal(t, st.Bytes-HeaderSize, st.LiveBytes)
	require.NoError(t, l.Close())

	l2, rep := openMem(t, fs, Options{})
	require.Equal(t, 1, rep.Files)
	require.Empty(t, rep.Cuts)
	require.Empty(t, rep.BadSlots)
	for i, g := range gens {
		require.Len(t, l2.Extents(pid(i)), 4)
		require.Equal(t, uint64(13), readAllOf(t, l2, pid(i), g.tag, 3))
	}
	require.Equal(t, st, l2.Stats())
	_, err := l2.Segment(pid(9), 1, nil)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = l2.Segment(pid(0), 2, nil)
	require.ErrorIs(t, err, ErrNotFound)
}

// A segment homed twice (a replay) is written once.
func TestAppendSameBaseTwiceWritesOnce(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	g := newSegs(t, "a")
	seg := g.next(2)
	e1, err := l.Append(pid(1), seg)
	require.NoError(t, err)
	size := l.Stats().Bytes
	e2, err := l.Append(pid(1), seg)
	require.NoError(t, err)
	require.Equal(t, e1, e2)
	require.Equal(t, size, l.Stats().Bytes)
	other := newSegs(t, "b").next(2) // also at offset 1, other records
	_, err = l.Append(pid(1), other)
	require.ErrorIs(t, err, ErrConflict)
	require.Equal(t, size, l.Stats().Bytes)
	_, err = l.Append(pid(1), []byte("not a segment"))
	require.ErrorIs(t, err, ErrCorrupt)
}

// Trims kill the segments below them, across a reopen; a dropped partition
// refuses its old segments and is gone from Partitions.
func TestTrimAndDrop(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	a, b := newSegs(t, "a"), newSegs(t, "b")
	for i := 0; i < 3; i++ {
		_, err := l.Append(pid(1), a.next(2)) // bases 1, 3, 5
		require.NoError(t, err)
		_, err = l.Append(pid(2), b.next(2))
		require.NoError(t, err)
	}
	require.NoError(t, l.Trim(pid(1), 4)) // the segment at 3 holds 3 and 4: kept (whole segments)
	require.Len(t, l.Extents(pid(1)), 2)
	require.NoError(t, l.Trim(pid(1), 5))
	require.Len(t, l.Extents(pid(1)), 1)
	require.Equal(t, uint64(5), l.Extents(pid(1))[0].Base)
	require.NoError(t, l.Trim(pid(2), Dropped))
	require.Nil(t, l.Extents(pid(2)))
	require.Equal(t, [][16]byte{pid(1)}, l.Partitions())
	require.NoError(t, l.Trim(pid(7), 10)) // no frame of it: nothing written
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	l2, _ := openMem(t, fs, Options{})
	require.Len(t, l2.Extents(pid(1)), 1)
	require.Equal(t, uint64(7), readAllOf(t, l2, pid(1), "a", 2))
	require.Nil(t, l2.Extents(pid(2)))
	_, err := l2.Append(pid(2), newSegs(t, "b").next(2))
	require.ErrorIs(t, err, ErrTrimmed)
}

// Past MaxFileBytes the active file rotates; every file's frames read back
// after a reopen.
func TestRotation(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 1024})
	g := newSegs(t, "a")
	for i := 0; i < 20; i++ {
		_, err := l.Append(pid(1), g.next(2))
		require.NoError(t, err)
	}
	files := l.Stats().Files
	require.Greater(t, files, 3)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	names, err := fs.List("/data/small")
	require.NoError(t, err)
	require.Len(t, names, files)
	require.Equal(t, FileName(1), names[0])
	l2, _ := openMem(t, fs, Options{MaxFileBytes: 1024})
	require.Equal(t, uint64(41), readAllOf(t, l2, pid(1), "a", 2))
}

// A file mostly dead is compacted: its live frames move to the active file,
// it is removed, a dropped partition stays dropped (its trim copied), and a
// reopen builds the same index.
func TestCompaction(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 4096})
	gens := make([]*segs, 8)
	for i := range gens {
		gens[i] = newSegs(t, fmt.Sprint("p", i))
	}
	for l.Stats().Files < 3 {
		for i, g := range gens {
			_, err := l.Append(pid(i), g.next(1))
			require.NoError(t, err)
		}
	}
	for i := 1; i < len(gens); i++ {
		require.NoError(t, l.Trim(pid(i), Dropped))
	}
	next0 := readAllOf(t, l, pid(0), "p0", 1)
	before := l.Stats()
	st, err := l.Compact()
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Files, 2)
	require.Greater(t, st.FreedBytes, st.CopiedBytes)
	after := l.Stats()
	require.Less(t, after.Bytes, before.Bytes)
	require.Equal(t, before.LiveBytes, after.LiveBytes)
	require.Equal(t, next0, readAllOf(t, l, pid(0), "p0", 1))
	require.Equal(t, [][16]byte{pid(0)}, l.Partitions())
	require.NoError(t, l.Close())

	l2, _ := openMem(t, fs, Options{MaxFileBytes: 4096})
	require.Equal(t, after, l2.Stats())
	require.Equal(t, next0, readAllOf(t, l2, pid(0), "p0", 1))
	for i := 1; i < len(gens); i++ {
		require.Nil(t, l2.Extents(pid(i)), "partition %d stays dropped", i)
	}
}

// A crash after compaction copied a file's frames but before it removed the
// file (the old file is put back) leaves two copies; Open keeps one of each.
func TestCompactionCrashBeforeRemoveKeepsOneCopy(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 2048})
	a := newSegs(t, "a")
	others := []*segs{newSegs(t, "b"), newSegs(t, "c"), newSegs(t, "d"), newSegs(t, "e"), newSegs(t, "f"), newSegs(t, "g")}
	for l.Stats().Files < 2 {
		_, err := l.Append(pid(1), a.next(1))
		require.NoError(t, err)
		for i, g := range others {
			_, err = l.Append(pid(2+i), g.next(1))
			require.NoError(t, err)
		}
	}
	for i := range others {
		require.NoError(t, l.Trim(pid(2+i), Dropped))
	}
	require.NoError(t, l.Sync())
	old := fs.Bytes("/data/small/" + FileName(1))
	want := readAllOf(t, l, pid(1), "a", 1)
	wantExt := len(l.Extents(pid(1)))
	st, err := l.Compact()
	require.NoError(t, err)
	require.Equal(t, 1, st.Files)
	require.NoError(t, l.Close())
	fs.SetBytes("/data/small/"+FileName(1), old)

	l2, _ := openMem(t, fs, Options{MaxFileBytes: 2048})
	require.Len(t, l2.Extents(pid(1)), wantExt)
	require.Equal(t, want, readAllOf(t, l2, pid(1), "a", 1))
	for i := range others {
		require.Nil(t, l2.Extents(pid(2+i)))
	}
	// The next compaction removes the old file again.
	st, err = l2.Compact()
	require.NoError(t, err)
	require.Equal(t, 1, st.Files)
	require.Equal(t, want, readAllOf(t, l2, pid(1), "a", 1))
}

// A segment whose frame would pass MaxBody is refused and leaves the file as it was.
func TestAppendTooLarge(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	g := newSegs(t, "a")
	_, err := l.Append(pid(1), g.next(1))
	require.NoError(t, err)
	size := l.Stats().Bytes
	big := make([]byte, MaxBody+1)
	for i := range big {
		big[i] = byte(i*7919 + i>>8) // does not compress below MaxBody
	}
	_, seg, err := g.log.AppendTo(nil, 1, []segment.Record{{TransactionID: "big", Payload: big}})
	require.NoError(t, err)
	_, err = l.Append(pid(1), seg)
	require.ErrorIs(t, err, record.ErrTooLarge)
	require.Equal(t, size, l.Stats().Bytes)
	require.Len(t, l.Extents(pid(1)), 1)
}
