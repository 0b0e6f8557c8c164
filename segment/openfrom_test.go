package segment

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// twoFiles is the layout the OpenFrom tests start from: /p/…01.seg holds segments
// [1-3] [4-6] [7-9], /p/…10.seg holds [10-12] [13-15]; segs are their bytes.
type twoFiles struct {
	mem  *vfs.Mem
	segs [][]byte
	recs []Record
}

func newTwoFiles(t *testing.T, opts Options) *twoFiles {
	t.Helper()
	tf := &twoFiles{mem: vfs.NewMem()}
	opts.MaxFileBytes = 900
	l, _ := openMem(t, tf.mem, opts)
	for i := 0; i < 5; i++ {
		rs := recs(3*i, 3, 60)
		_, seg, err := l.AppendTo(nil, int64(100*(i+1)), rs)
		require.NoError(t, err)
		tf.segs, tf.recs = append(tf.segs, seg), append(tf.recs, rs...)
	}
	_, _, ok, err := l.FindTransaction(tf.recs[0].TransactionID) // dedup.idx gets every entry at Close
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Close())
	require.Equal(t, []uint64{1, 10}, []uint64{l.files[0].base, l.files[1].base}, "the layout the cases assume")
	return tf
}

// file1 and file10 are the two segment files' paths.
var (
	file1  = "/p/" + segName(1)
	file10 = "/p/" + segName(10)
)

// cat joins byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// pDirState is every file under /p with its bytes: what "changes nothing" compares.
func pDirState(t *testing.T, m *vfs.Mem) map[string][]byte {
	t.Helper()
	names, err := m.List("/p")
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, n := range names {
		out[n] = m.Bytes("/p/" + n)
	}
	return out
}

// Issue 14: everything from keepBelow on was written but never synced, so OpenFrom cuts
// it whatever it is (valid segments, zeros or garbage followed by valid segments, a torn
// segment, whole newer files from an unsynced rotation), keeps everything below, and a
// second run finds nothing to cut.
func TestOpenFromCutsTheUnsyncedRegion(t *testing.T) {
	garbage := bytes.Repeat([]byte("garbage!"), 20)
	cases := []struct {
		name      string
		keepBelow uint64
		files     func(tf *twoFiles) map[string][]byte // replaced contents; nil = removed
		cutFile   string
		cutAt     int // -1: right after the segment ending at keepBelow-1
		removed   []string
	}{
		{"kill -9: the unsynced segments are all there", 13, func(tf *twoFiles) map[string][]byte { return nil },
			file10, -1, nil},
		{"zeros in the middle, then valid segments", 13, func(tf *twoFiles) map[string][]byte {
			return map[string][]byte{segName(10): cat(tf.segs[3], make([]byte, 200), tf.segs[4], tf.segs[4])}
		}, file10, -1, nil},
		{"garbage in the middle, then valid segments", 13, func(tf *twoFiles) map[string][]byte {
			return map[string][]byte{segName(10): cat(tf.segs[3], garbage, tf.segs[4])}
		}, file10, -1, nil},
		{"a torn segment", 13, func(tf *twoFiles) map[string][]byte {
			return map[string][]byte{segName(10): cat(tf.segs[3], tf.segs[4][:70])}
		}, file10, -1, nil},
		{"at a file boundary: the newer file goes", 10, func(tf *twoFiles) map[string][]byte { return nil },
			"", 0, []string{file10}},
		{"garbage after the sealed file's last segment, and a newer file of garbage", 10, func(tf *twoFiles) map[string][]byte {
			return map[string][]byte{segName(1): cat(tf.segs[0], tf.segs[1], tf.segs[2], garbage), segName(10): garbage}
		}, file1, -1, []string{file10}},
		{"in a sealed file: its tail and the newer file go", 7, func(tf *twoFiles) map[string][]byte { return nil },
			file1, -1, []string{file10}},
		{"a torn tail in a sealed file, and files of two unsynced rotations", 7, func(tf *twoFiles) map[string][]byte {
			return map[string][]byte{segName(1): cat(tf.segs[0], tf.segs[1], tf.segs[2][:100]), segName(20): tf.segs[4]}
		}, file1, -1, []string{file10, "/p/" + segName(20)}},
		{"everything was synced: nothing to cut", 16, func(tf *twoFiles) map[string][]byte { return nil }, "", 0, nil},
		{"keep nothing: a fresh log", 1, func(tf *twoFiles) map[string][]byte { return nil }, "", 0, []string{file1, file10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tf := newTwoFiles(t, Options{})
			for name, b := range tc.files(tf) {
				tf.mem.SetBytes("/p/"+name, b)
			}
			sizeBefore := len(tf.mem.Bytes(tc.cutFile))
			wantCutAt := tc.cutAt
			if wantCutAt < 0 { // right after the segment ending at keepBelow-1
				wantCutAt = 0
				for _, s := range tf.segs {
					if h, _ := parseHeader(s); h.last() < tc.keepBelow && (h.base >= 10) == (tc.cutFile == file10) {
						wantCutAt += len(s)
					}
				}
			}
			plan, err := planFrom(tf.mem, "/p", tc.keepBelow)
			require.NoError(t, err)
			l, rep, err := openLogFrom(tf.mem, "/p", Options{MaxFileBytes: 900}, tc.keepBelow)
			require.NoError(t, err)
			u := rep.Unsynced
			assert.Equal(t, u, plan, "PlanFrom says, reading only, what OpenFrom cuts")
			assert.Equal(t, tc.keepBelow, u.KeepBelow)
			assert.Equal(t, tc.cutFile, u.File)
			if tc.cutFile != "" {
				assert.Equal(t, int64(wantCutAt), u.At)
				assert.Equal(t, int64(sizeBefore-wantCutAt), u.Bytes)
				assert.Len(t, tf.mem.Bytes(tc.cutFile), wantCutAt)
			}
			assert.Equal(t, tc.removed, u.Removed)
			assert.Equal(t, tc.cutFile != "" || tc.removed != nil, u.Any())
			if u.Any() {
				assert.True(t, rep.Repaired())
				assert.Contains(t, u.String(), "the commit log holds them")
			}
			assert.Zero(t, rep.TruncatedBytes, "no torn-tail cut, no quarantine copy")
			assert.Equal(t, tc.keepBelow, l.NextOffset())
			got := readAll(t, l, 1)
			require.Len(t, got, int(tc.keepBelow-1))
			for i := range got {
				requireRecord(t, tf.recs[i], got[i])
			}
			if tc.keepBelow > 1 {
				_, _, ok, err := l.FindTransaction(tf.recs[tc.keepBelow-2].TransactionID)
				require.NoError(t, err)
				assert.True(t, ok)
			}
			if tc.keepBelow <= 15 {
				_, _, ok, err := l.FindTransaction(tf.recs[tc.keepBelow-1].TransactionID)
				require.NoError(t, err)
				assert.False(t, ok, "the dedup index forgets what was cut")
			}
			require.NoError(t, l.Close())

			again, rep, err := openLogFrom(tf.mem, "/p", Options{MaxFileBytes: 900}, tc.keepBelow)
			require.NoError(t, err)
			assert.False(t, rep.Unsynced.Any(), "idempotent: %s", rep.Unsynced)
			assert.Equal(t, tc.keepBelow, again.NextOffset())
			first, err := again.Append(1000, recs(500, 2, 10))
			require.NoError(t, err)
			assert.Equal(t, tc.keepBelow, first)
			require.NoError(t, again.Close())
			plain, rep := openMem(t, tf.mem, Options{MaxFileBytes: 900})
			assert.Zero(t, rep.TruncatedBytes)
			assert.Equal(t, tc.keepBelow+2, plain.NextOffset())
			require.NoError(t, plain.Close())
		})
	}
}

// Issue 14: below keepBelow Open's rules hold: missing or damaged offsets there were
// synced, so they are corruption, named, and OpenFrom changes nothing.
func TestOpenFromRefusesMissingSyncedOffsets(t *testing.T) {
	cases := []struct {
		name        string
		keepBelow   uint64
		edit        func(tf *twoFiles)
		file        string
		first, last uint64
		words       string
		tail        record.Tail
	}{
		{"the file ends before keepBelow", 16, func(tf *twoFiles) {
			tf.mem.SetBytes(file10, tf.segs[3])
		}, file10, 13, 15, "the file's segments end before offset 13", record.TailClean},
		{"a damaged segment below keepBelow, a whole one after it", 13, func(tf *twoFiles) {
			b := cat(tf.segs[3], tf.segs[4])
			b[100] ^= 0x40
			tf.mem.SetBytes(file10, b)
		}, file10, 10, 12, "checksum mismatch", record.TailCorrupt},
		{"zeros where synced segments were", 13, func(tf *twoFiles) {
			tf.mem.SetBytes(file10, make([]byte, 300))
		}, file10, 10, 12, "offsets below 13 were synced", record.TailZeros},
		{"a segment across keepBelow: the files and the commit log disagree", 12, func(tf *twoFiles) {},
			file10, 10, 12, "across 12", record.TailCorrupt},
		{"no file below keepBelow", 10, func(tf *twoFiles) {
			require.NoError(t, tf.mem.Remove(file1))
			require.NoError(t, tf.mem.Remove(file10))
			tf.mem.SetBytes("/p/"+segName(20), tf.segs[4])
		}, "/p", 1, 9, "no segment file holds offsets below 10", record.TailClean},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tf := newTwoFiles(t, Options{})
			tc.edit(tf)
			before := pDirState(t, tf.mem)
			_, perr := planFrom(tf.mem, "/p", tc.keepBelow)
			_, _, err := openLogFrom(tf.mem, "/p", Options{}, tc.keepBelow)
			require.Error(t, err)
			var ce, pce *CorruptionError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.True(t, errors.As(perr, &pce), "PlanFrom refuses as OpenFrom does: %v", perr)
			assert.Equal(t, ce, pce)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Equal(t, tc.file, ce.File)
			assert.Equal(t, [2]uint64{tc.first, tc.last}, [2]uint64{ce.FirstOffset, ce.LastOffset})
			assert.Contains(t, ce.Reason, tc.words)
			assert.Equal(t, tc.tail, ce.Tail)
			assert.Equal(t, before, pDirState(t, tf.mem), "nothing changed")
		})
	}
	t.Run("a missing directory", func(t *testing.T) {
		_, _, err := openLogFrom(vfs.NewMem(), "/p", Options{}, 5)
		var ce *CorruptionError
		require.True(t, errors.As(err, &ce), "%v", err)
		assert.Equal(t, [2]uint64{1, 4}, [2]uint64{ce.FirstOffset, ce.LastOffset})
		_, perr := planFrom(vfs.NewMem(), "/p", 5)
		assert.Equal(t, err.Error(), "segment log /p: "+perr.Error())
		plan, perr := planFrom(vfs.NewMem(), "/p", 1)
		assert.NoError(t, perr)
		assert.False(t, plan.Any())
		l, _, err := openLogFrom(vfs.NewMem(), "/p", Options{}, 1)
		require.NoError(t, err, "keeping nothing of a log never created is a fresh log")
		assert.Equal(t, uint64(1), l.NextOffset())
	})
	t.Run("keepBelow 0", func(t *testing.T) {
		_, _, err := openLogFrom(vfs.NewMem(), "/p", Options{}, 0)
		assert.ErrorContains(t, err, "offsets start at 1")
	})
}

// A log whose older files retention removed keeps its newest file, emptied, to carry
// the next offset; so does a log whose offsets just below keepBelow are a quarantined
// gap. A quarantined gap further back stays as it is.
func TestOpenFromCarriesTheNextOffset(t *testing.T) {
	t.Run("retention removed every older file", func(t *testing.T) {
		tf := newTwoFiles(t, Options{})
		require.NoError(t, tf.mem.Remove(file1))
		plan, err := planFrom(tf.mem, "/p", 10)
		require.NoError(t, err)
		l, rep, err := openLogFrom(tf.mem, "/p", Options{}, 10)
		require.NoError(t, err)
		assert.Equal(t, rep.Unsynced, plan)
		assert.Equal(t, file10, rep.Unsynced.File)
		assert.Equal(t, int64(len(tf.segs[3])+len(tf.segs[4])), rep.Unsynced.Bytes)
		assert.Equal(t, [2]uint64{10, 10}, [2]uint64{l.FirstOffset(), l.NextOffset()})
		_, err = l.AppendSegment(tf.segs[3])
		require.NoError(t, err, "the replay continues at keepBelow")
		require.NoError(t, l.Close())
	})
	quarantined := func(t *testing.T) *twoFiles {
		tf := newTwoFiles(t, Options{})
		tf.mem.SetBytes(file10, tf.segs[3]) // 10-12
		tf.mem.SetBytes("/p/"+segName(16), cat(reoffset(tf.segs[4], 16), reoffset(tf.segs[4], 19)))
		require.NoError(t, addQuarantinedFS(tf.mem, "/p", OffsetRange{13, 15}, "moved"))
		return tf
	}
	t.Run("a quarantined gap just below keepBelow", func(t *testing.T) {
		tf := quarantined(t)
		plan, err := planFrom(tf.mem, "/p", 16)
		require.NoError(t, err)
		l, rep, err := openLogFrom(tf.mem, "/p", Options{}, 16)
		require.NoError(t, err)
		assert.Equal(t, rep.Unsynced, plan)
		assert.Equal(t, "/p/"+segName(16), rep.Unsynced.File)
		assert.Equal(t, uint64(16), l.NextOffset())
		assert.Len(t, readAll(t, l, 1), 12)
		require.NoError(t, l.Close())
	})
	t.Run("a quarantined gap further back", func(t *testing.T) {
		tf := quarantined(t)
		l, rep, err := openLogFrom(tf.mem, "/p", Options{}, 19)
		require.NoError(t, err)
		assert.Equal(t, "/p/"+segName(16), rep.Unsynced.File)
		assert.Equal(t, int64(len(tf.segs[4])), rep.Unsynced.At)
		got := readAll(t, l, 1)
		require.Len(t, got, 15)
		assert.Equal(t, uint64(16), got[12].Offset, "the gap is skipped")
		require.NoError(t, l.Close())
	})
}

// reoffset returns seg moved to base offset base (checksum recomputed).
func reoffset(seg []byte, base uint64) []byte {
	b := append([]byte(nil), seg...)
	h, _ := parseHeader(b)
	h.base = base
	putHeader(b, h)
	return reseal(b)
}

// Issue 14: dedup.idx entries at or after keepBelow are cut, durably: otherwise, after
// other records took those offsets and a clean restart, they would claim the offsets as
// indexed and hide the new records' ids from the dedup check (the file's last entry can
// even match: a retried push landing where it was before).
func TestOpenFromDropsDedupEntries(t *testing.T) {
	tf := newTwoFiles(t, Options{})
	dedup := tf.mem.Bytes("/p/" + dedupFileName)
	require.Len(t, dedup, index.DedupHeaderSize+15*index.DedupEntrySize, "every record's entry is in the file")
	plan, err := planFrom(tf.mem, "/p", 10)
	require.NoError(t, err)
	assert.Equal(t, 6, plan.DedupEntries)
	l, rep, err := openLogFrom(tf.mem, "/p", Options{}, 10)
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Unsynced.DedupEntries)
	assert.Len(t, tf.mem.Bytes("/p/"+dedupFileName), index.DedupHeaderSize+9*index.DedupEntrySize)
	assert.Len(t, tf.mem.Crash(false).Bytes("/p/"+dedupFileName), index.DedupHeaderSize+9*index.DedupEntrySize, "the cut is durable")
	other := recs(100, 3, 20)
	retried := tf.recs[12:15] // the old push at 13-15 is retried after a new one at 10-12
	_, err = l.Append(1000, other)
	require.NoError(t, err)
	_, err = l.Append(1001, retried)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	again, _ := openMem(t, tf.mem, Options{})
	for i, r := range append(append([]Record(nil), other...), retried...) {
		off, _, ok, err := again.FindTransaction(r.TransactionID)
		require.NoError(t, err)
		require.True(t, ok, r.TransactionID)
		assert.Equal(t, uint64(10+i), off)
	}
	_, _, ok, err := again.FindTransaction(tf.recs[9].TransactionID)
	require.NoError(t, err)
	assert.False(t, ok, "the cut record is gone")
	require.NoError(t, again.Close())
}

// The cut file's index file keeps only entries below keepBelow, even when the entries
// past it describe segments still whole in the file (a kill -9).
func TestOpenFromIndexFile(t *testing.T) {
	withIndexFiles(t)
	tf := newTwoFiles(t, Options{})
	idxPath := "/p/" + idxName(10)
	b := tf.mem.Bytes(idxPath)
	require.Equal(t, 2, index.ValidEntries(b[index.HeaderSize:], 10))
	l, rep, err := openLogFrom(tf.mem, "/p", Options{}, 13)
	require.NoError(t, err)
	assert.Contains(t, rep.IndexesRebuilt, idxPath)
	b = tf.mem.Bytes(idxPath)
	assert.Equal(t, 1, index.ValidEntries(b[index.HeaderSize:], 10))
	first, err := l.Append(900, recs(50, 4, 10))
	require.NoError(t, err)
	assert.Equal(t, uint64(13), first)
	got := readAll(t, l, 10)
	require.Len(t, got, 7)
	assert.Equal(t, "tx-50", got[3].TransactionID)
	require.NoError(t, l.Close())
	again, rep := openMem(t, tf.mem, Options{})
	assert.False(t, rep.Repaired())
	require.NoError(t, again.Close())
}
