package segment

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 7: the active file's index file is written only once it is due.
func TestLazyIndexFile(t *testing.T) {
	idx := "/p/" + idxName(1)
	cases := []struct {
		name      string
		appends   int
		payload   int
		wantFile  bool
		wantEntry int // entries in the index file when it exists
	}{
		{"one segment: no index file", 1, 10, false, 0},
		{"one below the threshold: no index file", LazyIndexSegments - 1, 10, false, 0},
		{"the Nth segment writes the index file", LazyIndexSegments, 10, true, LazyIndexSegments},
		{"past the threshold the file keeps growing", LazyIndexSegments + 3, 10, true, LazyIndexSegments + 3},
		{"a segment past LazyIndexBytes writes it at once", 1, LazyIndexBytes + 10, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			l, _ := openMem(t, fs, Options{})
			want := make([]Record, tc.appends)
			for i := range want {
				want[i] = Record{TransactionID: "tx", Payload: bytes.Repeat([]byte{'7'}, tc.payload)}
				want[i].ID[0] = byte(i)
				_, err := l.Append(int64(100+i), want[i:i+1])
				require.NoError(t, err)
			}
			b := fs.Bytes(idx)
			if !tc.wantFile {
				assert.Nil(t, b)
			} else {
				require.NotNil(t, b)
			}
			require.NoError(t, l.Close())
			if tc.wantFile {
				assert.Len(t, fs.Bytes(idx), 32+32*tc.wantEntry, "Close cuts the file to its entries")
			}
			// Reopen: the entries come back from the file or from a scan.
			l2, rep := openMem(t, fs, Options{})
			assert.False(t, rep.Repaired(), "nothing to repair")
			assert.Equal(t, uint64(tc.appends+1), l2.NextOffset())
			got := readAll(t, l2, 1)
			require.Len(t, got, tc.appends)
			requireRecord(t, want[tc.appends-1], got[tc.appends-1])
			assert.Equal(t, uint64(tc.appends), l2.OffsetAtOrAfterTime(int64(100+tc.appends-1)))
			require.NoError(t, l2.Close())
		})
	}
}

// Issue 7: rotation seals a file with its index file; the new active file has none.
func TestLazyIndexRotationWritesSealedIndex(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 200})
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(100+i), recs(i, 1, 300))
		require.NoError(t, err)
	}
	assert.Len(t, fs.Bytes("/p/"+idxName(1)), 32+32, "sealed: index file cut to its one entry")
	assert.Len(t, fs.Bytes("/p/"+idxName(2)), 32+32)
	assert.Nil(t, fs.Bytes("/p/"+idxName(3)), "active: index in memory")
	got := readAll(t, l, 1)
	require.Len(t, got, 3)
	requireRecord(t, rec(0, 300), got[0])
	require.NoError(t, l.Close())
}

// Issue 7: a torn tail of an active file with no index file is cut like any other.
func TestLazyIndexTornTail(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(100+i), recs(i*2, 2, 40))
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	lastStart := len(fs.Bytes("/p/" + segName(1)))
	_, err := l.Append(400, recs(6, 2, 40))
	require.NoError(t, err)
	full := fs.Bytes("/p/" + segName(1))
	crashed := fs.Crash(true)
	crashed.SetBytes("/p/"+segName(1), full[:lastStart+HeaderSize+5])
	l2, rep := openMem(t, crashed, Options{})
	assert.Equal(t, int64(HeaderSize+5), rep.TruncatedBytes)
	assert.Equal(t, uint64(7), rep.LostFirstOffset)
	assert.Equal(t, uint64(8), rep.LostLastOffset)
	assert.Empty(t, rep.IndexesRebuilt, "no index file was rebuilt: it lives in memory")
	assert.Equal(t, uint64(7), l2.NextOffset())
	require.Len(t, readAll(t, l2, 1), 6)
	require.NoError(t, l2.Close())
}

// Issue 7: a released log reopens its small active file from the in-memory
// index it kept, and appends continue into it.
func TestLazyIndexReleaseReload(t *testing.T) {
	fs := vfs.NewMem()
	l, _, err := openLog(fs, "/p", Options{Handles: NewHandleCache(64)})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(100+i), recs(i, 1, 20))
		require.NoError(t, err)
	}
	require.True(t, l.Release())
	assert.Len(t, l.files[0].heap.b, 32+3*32, "kept, cut to its entries")
	got := readAll(t, l, 2)
	require.Len(t, got, 2)
	requireRecord(t, rec(2, 20), got[1])
	require.True(t, l.Release())
	for i := 3; i < LazyIndexSegments; i++ {
		_, err := l.Append(int64(100+i), recs(i, 1, 20))
		require.NoError(t, err)
	}
	require.NotNil(t, fs.Bytes("/p/"+idxName(1)), "written at the Nth segment")
	require.Len(t, readAll(t, l, 1), LazyIndexSegments)
	require.NoError(t, l.Close())
	assert.Len(t, fs.Bytes("/p/"+idxName(1)), 32+32*LazyIndexSegments)
}

// Issue 7: fsck's test of whether an active file may lack its index file.
func TestIndexOptional(t *testing.T) {
	cases := []struct {
		name     string
		appends  int
		wantSegs int
		wantOK   bool
	}{
		{"empty file", 0, 0, true},
		{"three segments", 3, 3, true},
		{"at the threshold", LazyIndexSegments, LazyIndexSegments, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			l, err := Create(dir, Options{})
			require.NoError(t, err)
			if tc.appends == 0 {
				require.NoError(t, os.WriteFile(filepath.Join(dir, segName(1)), nil, 0o644))
			}
			for i := 0; i < tc.appends; i++ {
				_, err := l.Append(int64(100+i), recs(i, 1, 20))
				require.NoError(t, err)
			}
			require.NoError(t, l.Close())
			segs, ok, err := IndexOptional(filepath.Join(dir, segName(1)))
			require.NoError(t, err)
			assert.Equal(t, tc.wantSegs, segs)
			assert.Equal(t, tc.wantOK, ok)
		})
	}
}
