package smallfs

import (
	"fmt"
	"os"
	"testing"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

const (
	parent = "/data/partitions"
	dir    = "/data/partitions/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
)

// world is a real file system twin, an entry log on it and the seam over both.
type world struct {
	t    *testing.T
	real *vfs.Mem
	el   *entrylog.Log
	fs   *FS
}

func newWorld(t *testing.T, real *vfs.Mem) *world {
	t.Helper()
	require.NoError(t, real.MkdirAll(parent))
	el, _, err := entrylog.Open("/data/small", entrylog.Options{FS: real})
	require.NoError(t, err)
	t.Cleanup(func() { _ = el.Close() })
	return &world{t: t, real: real, el: el, fs: New(real, parent, el)}
}

func recsFrom(first uint64, n int) []segment.Record {
	out := make([]segment.Record, n)
	for i := range out {
		off := first + uint64(i)
		out[i] = segment.Record{TransactionID: fmt.Sprint("tx-", off), Payload: []byte(fmt.Sprintf(`{"o":%d}`, off))}
		out[i].ID[0], out[i].ID[1] = byte(off), byte(off>>8)
	}
	return out
}

// readAll reads l from offset 1 and checks every record's exact fields.
func readAll(t *testing.T, l *segment.Log, want uint64) {
	t.Helper()
	var rb segment.ReadBuffer
	next := uint64(1)
	for {
		msgs, err := l.Read(next, 1000, 0, &rb)
		require.NoError(t, err)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			require.Equal(t, next, m.Offset)
			require.Equal(t, fmt.Sprint("tx-", next), m.TransactionID)
			require.Equal(t, fmt.Sprintf(`{"o":%d}`, next), string(m.Payload))
			next++
		}
	}
	require.Equal(t, want, next)
}

// A log made on the seam makes no inode: its records are served from memory,
// then from the entry log once homed, and a dedup lookup finds them.
func TestLogRunsWithoutADirectory(t *testing.T) {
	w := newWorld(t, vfs.NewMem())
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	defer l.Close()
	require.True(t, w.fs.IsVirtual(dir))
	for i := 0; i < 5; i++ {
		_, err := l.Append(int64(100+i), recsFrom(l.NextOffset(), 60))
		require.NoError(t, err)
	}
	readAll(t, l, 301)
	ok, err := vfs.Exists(w.real, dir)
	require.NoError(t, err)
	require.False(t, ok, "no real directory")
	names, err := w.fs.List(parent)
	require.NoError(t, err)
	require.Equal(t, []string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}, names)

	n, err := w.fs.Home(dir, 181) // segments of 60: 1-60, 61-120, 121-180 are below 181
	require.NoError(t, err)
	require.Equal(t, 3, n)
	id, err := idOf(dir)
	require.NoError(t, err)
	require.Len(t, w.el.Extents(id), 3)
	readAll(t, l, 301)
	off, _, found, err := l.FindTransaction("tx-77")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, uint64(77), off)

	n, err = w.fs.Home(dir, 301)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, int64(0), int64(len(w.fs.dirs[dir].segs[segName(1)].tail)), "nothing left in memory")
	readAll(t, l, 301)
	require.Greater(t, w.fs.Bytes(dir), int64(300*10))
}

// After the entry log is synced and the process restarts, Attach gives the
// log its homed records back; what was never homed is gone with memory (the
// commit log replays it), and appends continue.
func TestAttachAfterRestart(t *testing.T) {
	real := vfs.NewMem()
	w := newWorld(t, real)
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(100+i), recsFrom(l.NextOffset(), 10))
		require.NoError(t, err)
	}
	_, err = w.fs.Home(dir, 21)
	require.NoError(t, err)
	require.NoError(t, w.el.Sync())
	crashed := real.Crash(false)

	w2 := newWorld(t, crashed)
	require.NoError(t, w2.fs.Attach(dir))
	l2, _, err := segment.OpenFrom(dir, segment.Options{FS: w2.fs}, 21)
	require.NoError(t, err)
	defer l2.Close()
	readAll(t, l2, 21)
	// The commit log's replay of the third segment.
	_, err = l2.Append(102, recsFrom(21, 10))
	require.NoError(t, err)
	readAll(t, l2, 31)
	require.NoError(t, l.Close())
}

// Start-up may cut into the homed prefix at a segment boundary (below what
// no summary covers): the segments leave the view, and homing the same
// segments again reuses the entry log's extents.
func TestCutIntoHomedPrefix(t *testing.T) {
	real := vfs.NewMem()
	w := newWorld(t, real)
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	var segs [][]byte
	for i := 0; i < 3; i++ {
		_, seg, err := l.AppendTo(nil, int64(100+i), recsFrom(l.NextOffset(), 10))
		require.NoError(t, err)
		segs = append(segs, seg)
	}
	require.NoError(t, l.Close())
	_, err = w.fs.Home(dir, 31)
	require.NoError(t, err)
	require.NoError(t, w.el.Sync())
	size := w.el.Stats().Bytes
	crashed := real.Crash(false)

	w2 := newWorld(t, crashed)
	require.NoError(t, w2.fs.Attach(dir))
	l2, _, err := segment.OpenFrom(dir, segment.Options{FS: w2.fs}, 11) // keep offsets 1-10
	require.NoError(t, err)
	defer l2.Close()
	readAll(t, l2, 11)
	for _, seg := range segs[1:] {
		_, err := l2.AppendSegment(seg)
		require.NoError(t, err)
	}
	_, err = w2.fs.Home(dir, 31)
	require.NoError(t, err)
	require.Equal(t, size, w2.el.Stats().Bytes, "homed again without a write")
	readAll(t, l2, 31)
}

// Removing a virtual directory drops its records from the entry log.
func TestRemoveAllDropsTheRecords(t *testing.T) {
	w := newWorld(t, vfs.NewMem())
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	_, err = l.Append(1, recsFrom(1, 3))
	require.NoError(t, err)
	_, err = w.fs.Home(dir, 4)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, w.fs.RemoveAll(dir))
	require.False(t, w.fs.IsVirtual(dir))
	id, _ := idOf(dir)
	require.Nil(t, w.el.Extents(id))
	names, err := w.fs.List(parent)
	require.NoError(t, err)
	require.Empty(t, names)
}

// With small off, Mkdir makes a real directory, and every path outside a
// virtual directory is the real file system's.
func TestSmallOffIsTheRealFileSystem(t *testing.T) {
	w := newWorld(t, vfs.NewMem())
	w.fs.SetSmall(false)
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	_, err = l.Append(1, recsFrom(1, 3))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.False(t, w.fs.IsVirtual(dir))
	b := w.real.Bytes(dir + "/" + segName(1))
	require.NotEmpty(t, b)
}

// Materialize gives a virtual directory its real files, byte for byte; the
// open log goes on appending to them, the entry log's copies are dropped,
// and the directory opens on the real file system alone.
func TestMaterialize(t *testing.T) {
	real := vfs.NewMem()
	w := newWorld(t, real)
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		_, err := l.Append(int64(100+i), recsFrom(l.NextOffset(), 10))
		require.NoError(t, err)
	}
	f, err := w.fs.OpenFile(dir+"/DESCRIPTOR", os.O_WRONLY|os.O_CREATE)
	require.NoError(t, err)
	_, err = f.Write([]byte("desc"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = w.fs.Home(dir, 21)
	require.NoError(t, err)
	virtual, err := w.fs.ReadFile(dir + "/" + segName(1))
	require.NoError(t, err)

	require.NoError(t, w.fs.Materialize(dir, []string{"DESCRIPTOR"}))
	require.False(t, w.fs.IsVirtual(dir))
	require.Equal(t, virtual, real.Bytes(dir+"/"+segName(1)))
	require.Equal(t, []byte("desc"), real.Bytes(dir+"/DESCRIPTOR"))
	id, _ := idOf(dir)
	require.Nil(t, w.el.Extents(id))
	names, err := real.List(dir)
	require.NoError(t, err)
	require.Equal(t, []string{segName(1), "DESCRIPTOR"}, names)

	_, err = l.Append(200, recsFrom(41, 10))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	readAll(t, l, 51)
	require.NoError(t, l.Close())
	require.Empty(t, w.fs.dirs[dir].segs, "the last handle closed leaves the name to the real directory")

	l2, _, err := segment.Open(dir, segment.Options{FS: real})
	require.NoError(t, err)
	defer l2.Close()
	readAll(t, l2, 51)
}

// Homing what a deletion dropped meanwhile is not an error: nothing is
// written and the tail is let go.
func TestHomeAfterDropIsNothing(t *testing.T) {
	w := newWorld(t, vfs.NewMem())
	l, err := segment.Create(dir, segment.Options{FS: w.fs})
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Append(1, recsFrom(1, 2))
	require.NoError(t, err)
	_, err = w.fs.Home(dir, 3)
	require.NoError(t, err)
	_, err = l.Append(2, recsFrom(3, 2))
	require.NoError(t, err)
	id, _ := idOf(dir)
	require.NoError(t, w.el.Trim(id, entrylog.Dropped))
	size := w.el.Stats().Bytes
	n, err := w.fs.Home(dir, 5)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, size, w.el.Stats().Bytes)
}
