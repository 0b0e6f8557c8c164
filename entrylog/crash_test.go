package entrylog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

const file1 = "/data/small/00000000000000000001.elog"

// fill appends n segments of one record each to partitions 0..parts-1 in turn.
func fill(t *testing.T, l *Log, gens []*segs, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := i % len(gens)
		_, err := l.Append(pid(k), gens[k].next(1))
		require.NoError(t, err)
	}
}

func gensOf(t *testing.T, n int) []*segs {
	out := make([]*segs, n)
	for i := range out {
		out[i] = newSegs(t, string(rune('a'+i)))
	}
	return out
}

// A crash keeps everything Sync covered and nothing it must not: what was
// appended after the last Sync is gone (the least a crash leaves) and the
// file opens cleanly.
func TestCrashKeepsWhatWasSynced(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	gens := gensOf(t, 3)
	fill(t, l, gens, 9)
	require.NoError(t, l.Sync())
	fill(t, l, gens, 6)
	crashed := fs.Crash(false)

	l2, rep := openMem(t, crashed, Options{})
	require.Empty(t, rep.Cuts)
	for i, g := range gens {
		require.Equal(t, uint64(4), readAllOf(t, l2, pid(i), g.tag, 1))
	}
}

// Power cuts at many seeds after a Sync and unsynced appends: every cut opens
// (a torn or zeroed tail past the synced slot is cut, its bytes kept), and
// holds every synced segment, whole.
func TestPowerCutsKeepWhatWasSynced(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		fs := vfs.NewMem()
		l, err := func() (*Log, error) { l, _, err := Open("/data/small", Options{FS: fs}); return l, err }()
		require.NoError(t, err)
		gens := gensOf(t, 2)
		fill(t, l, gens, 40)
		require.NoError(t, l.Sync())
		fill(t, l, gens, 60)
		cut := fs.PowerCut(seed)
		require.NoError(t, l.Close())

		l2, _, err := Open("/data/small", Options{FS: cut, QuarantineDir: "/data/quarantine/small"})
		require.NoError(t, err, "seed %d", seed)
		for i, g := range gens {
			next := readAllOf(t, l2, pid(i), g.tag, 1)
			require.GreaterOrEqual(t, next, uint64(21), "seed %d partition %d keeps its synced segments", seed, i)
		}
		rep, err := Check(cut, "/data/small")
		require.NoError(t, err)
		require.False(t, rep.Damaged(), "seed %d", seed)
		require.NoError(t, l2.Close())
	}
}

// A tail cut inside a frame past the synced length (kill -9 mid-write of the
// shared file) is cut at the last whole frame, its bytes kept in quarantine.
func TestTornTailIsCutAndKept(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	gens := gensOf(t, 2)
	fill(t, l, gens, 4)
	require.NoError(t, l.Sync())
	fill(t, l, gens, 2)
	require.NoError(t, l.Close())
	b := fs.Bytes(file1)
	whole := len(b)
	fs.SetBytes(file1, b[:whole-5]) // the last frame loses its last 5 bytes

	chk, err := Check(fs, "/data/small")
	require.NoError(t, err)
	require.False(t, chk.Damaged())
	require.True(t, chk.Files[0].Cut)
	require.Equal(t, record.TailTorn, chk.Files[0].Tail)

	l2, rep := openMem(t, fs, Options{QuarantineDir: "/data/quarantine/small"})
	require.Len(t, rep.Cuts, 1)
	c := rep.Cuts[0]
	require.Equal(t, record.TailTorn, c.Tail)
	require.Equal(t, int64(whole-5), c.To)
	kept := fs.Bytes(c.Kept)
	require.Equal(t, b[c.From:whole-5], kept)
	require.Equal(t, uint64(4), readAllOf(t, l2, pid(0), "a", 1)) // a's 1, 2, 3 whole
	require.Equal(t, uint64(3), readAllOf(t, l2, pid(1), "b", 1)) // b's 3 was the torn frame
	require.Equal(t, c.From, int64(len(fs.Bytes(file1))))
	// The next append goes where the cut was.
	e, err := l2.Append(pid(1), gens[1].next(1))
	require.NoError(t, err)
	require.Equal(t, c.From, e.Pos)
}

// A byte flipped in a frame below the synced length is damage: Open
// refuses, naming the range, and Check reports the same.
func TestDamageBelowSyncedIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	fill(t, l, gensOf(t, 2), 6)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	b := fs.Bytes(file1)
	b[len(b)-3] ^= 0x40 // inside the last synced frame: nothing verified after it
	fs.SetBytes(file1, b)

	_, _, err := Open("/data/small", Options{FS: fs})
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, record.TailDamaged, ce.Tail)
	require.Less(t, ce.StartByte, int64(len(b)))
	require.Equal(t, b, fs.Bytes(file1), "nothing cut")

	chk, err := Check(fs, "/data/small")
	require.NoError(t, err)
	require.True(t, chk.Damaged())
	require.Equal(t, ce.StartByte, chk.Files[0].Damage.StartByte)
}

// Damage with a verified frame after it is corrupt below the synced length;
// past it (a power cut keeps any subset of unsynced pages) everything from
// the damage on is cut, the verified frames after it included, and kept.
func TestDamageBeforeAVerifiedFrame(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	gens := gensOf(t, 1)
	fill(t, l, gens, 1)
	e1, err := l.Append(pid(0), gens[0].next(1))
	require.NoError(t, err)
	fill(t, l, gens, 1)
	require.NoError(t, l.Sync())
	e, err := l.Append(pid(0), gens[0].next(1))
	require.NoError(t, err)
	fill(t, l, gens, 1)
	require.NoError(t, l.Close())
	good := fs.Bytes(file1)

	b := bytes.Clone(good)
	b[e1.Pos+20] ^= 1 // synced
	fs.SetBytes(file1, b)
	_, _, err = Open("/data/small", Options{FS: fs})
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, record.TailCorrupt, ce.Tail)
	require.Equal(t, e1.Pos, ce.StartByte)

	b = bytes.Clone(good)
	b[e.Pos+20] ^= 1 // unsynced
	fs.SetBytes(file1, b)
	l2, rep := openMem(t, fs, Options{})
	require.Len(t, rep.Cuts, 1)
	require.Equal(t, record.TailCorrupt, rep.Cuts[0].Tail)
	require.Equal(t, e.Pos, rep.Cuts[0].From)
	require.Equal(t, b[e.Pos:], fs.Bytes(rep.Cuts[0].Kept))
	require.Equal(t, uint64(4), readAllOf(t, l2, pid(0), "a", 1))
}

// A file cut shorter than its synced length is damage, not a torn tail.
func TestFileShorterThanSyncedIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	fill(t, l, gensOf(t, 1), 3)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	b := fs.Bytes(file1)
	fs.SetBytes(file1, b[:len(b)-1])
	_, _, err := Open("/data/small", Options{FS: fs})
	require.ErrorIs(t, err, ErrCorrupt)
}

// A synced slot that fails its check reads as nothing synced: the file opens,
// the slot is reported, and its next Sync writes a good one.
func TestBadSlotIsReported(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	fill(t, l, gensOf(t, 1), 3)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	b := fs.Bytes(file1)
	b[33] ^= 0xff
	fs.SetBytes(file1, b)
	l2, rep := openMem(t, fs, Options{})
	require.Equal(t, []string{file1}, rep.BadSlots)
	require.Equal(t, uint64(4), readAllOf(t, l2, pid(0), "a", 1))
	_, err := l2.Append(pid(0), newSegsAt(t, "a", 4).next(1))
	require.NoError(t, err)
	require.NoError(t, l2.Sync())
	h, err := parseHeader(fs.Bytes(file1), 1)
	require.NoError(t, err)
	require.True(t, h.slotOK)
	require.Equal(t, int64(len(fs.Bytes(file1))), h.synced)
}

// The newest file with a header of zeros (a creation a crash cut short) is
// removed; an older one is damage.
func TestCutCreationIsRemoved(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	fill(t, l, gensOf(t, 1), 2)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	second := "/data/small/" + FileName(2)
	fs.SetBytes(second, make([]byte, 100))
	l2, rep := openMem(t, fs, Options{})
	require.Len(t, rep.Cuts, 1)
	require.Equal(t, second, rep.Cuts[0].File)
	require.Equal(t, "", rep.Cuts[0].Kept, "all zeros: nothing to keep")
	ok, err := vfs.Exists(fs, second)
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, 1, l2.Stats().Files)
	require.NoError(t, l2.Close())

	fs.SetBytes(second, make([]byte, 100))
	fs.SetBytes("/data/small/"+FileName(3), fs.Bytes(file1))
	_, _, err = Open("/data/small", Options{FS: fs})
	require.ErrorIs(t, err, ErrCorrupt, "a bad header in a file that is not the newest")
}

// newSegsAt is newSegs whose next segment starts at offset from.
func newSegsAt(t *testing.T, tag string, from uint64) *segs {
	g := newSegs(t, tag)
	for g.log.NextOffset() < from {
		g.next(1)
	}
	return g
}
