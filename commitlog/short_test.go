package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// fiveBatchesF is fiveBatches for a fuzz target's seed.
func fiveBatchesF(f *testing.F, m *vfs.Mem) (string, []byte, []int64) {
	l, _, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	var ends []int64
	for i := 1; i <= 5; i++ {
		tk, err := l.Append(byte(i%7), payload(i))
		if err == nil {
			err = tk.Wait()
		}
		if err != nil {
			f.Fatal(err)
		}
		ends = append(ends, l.files[len(l.files)-1].end)
	}
	path := l.files[len(l.files)-1].path
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	return path, m.Bytes(path), ends
}

// fiveBatches writes five synced batches into one preallocated file and
// returns the file's path, its bytes after Close, and where each batch ends.
func fiveBatches(t *testing.T, m *vfs.Mem) (string, []byte, []int64) {
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	var ends []int64
	for i := 1; i <= 5; i++ {
		appendWait(t, l, i)
		ends = append(ends, l.files[len(l.files)-1].end)
	}
	path := l.files[len(l.files)-1].path
	require.NoError(t, l.Close())
	return path, m.Bytes(path), ends
}

// TestCutPreallocatedFileIsDamage (issue 21 item 4): a preallocated file's
// zeros are synced before any batch goes into it, so no crash makes it
// shorter than its preallocation: a newest file that ends inside a batch, or
// right after one with no zero byte after it, was cut, and the batches it
// held past the cut were acknowledged. Open refuses it (ErrCorrupt,
// ErrShortFile) naming the file and the byte range and changes nothing;
// Inspect reports the same. Before, a cut inside a batch was zeroed as a
// torn tail and the server started without the acknowledged entries.
func TestCutPreallocatedFileIsDamage(t *testing.T) {
	cases := []struct {
		name string
		size func(ends []int64) int64
		tail record.Tail
		text func(name string, ends []int64) string
	}{
		{"cut inside the fourth batch", func(e []int64) int64 { return e[2] + 10 }, record.TailTorn,
			func(n string, e []int64) string {
				return fmt.Sprintf("commitlog: damaged: %s is shorter than its preallocation: the batch at byte %d runs past the end of the file at byte %d (bytes [%d,%d))", n, e[2], e[2]+10, e[2], e[2]+10)
			}},
		{"cut by one byte", func(e []int64) int64 { return e[4] - 1 }, record.TailTorn,
			func(n string, e []int64) string {
				return fmt.Sprintf("commitlog: damaged: %s is shorter than its preallocation: the batch at byte %d runs past the end of the file at byte %d (bytes [%d,%d))", n, e[3], e[4]-1, e[3], e[4]-1)
			}},
		{"cut right after the third batch", func(e []int64) int64 { return e[2] }, record.TailClean,
			func(n string, e []int64) string {
				return fmt.Sprintf("commitlog: damaged: %s is shorter than its preallocation: it ends at byte %d right after its last batch (or its header)", n, e[2])
			}},
		{"cut right after the last batch", func(e []int64) int64 { return e[4] }, record.TailClean,
			func(n string, e []int64) string {
				return fmt.Sprintf("commitlog: damaged: %s is shorter than its preallocation: it ends at byte %d right after its last batch (or its header)", n, e[4])
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := vfs.NewMem()
			path, data, ends := fiveBatches(t, m)
			cut := bytes.Clone(data[:tc.size(ends)])
			m.SetBytes(path, cut)
			name := path[len(testDir)+1:]

			_, _, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20})
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorIs(t, err, ErrShortFile)
			assert.Contains(t, err.Error(), tc.text(name, ends))
			assert.Equal(t, cut, m.Bytes(path), "the file is kept as it is")

			in, err := Inspect(m, testDir, nil)
			require.NoError(t, err)
			require.ErrorIs(t, in.Err, ErrShortFile)
			assert.Equal(t, tc.tail, in.Tail)
			assert.Equal(t, name, in.TailFile)
			assert.Equal(t, tc.size(ends), in.TailEnd, "the range ends at the file's end")
			assert.Less(t, in.TailStart, in.TailEnd+1)
		})
	}
}

// TestCutPreallocatedFileUnderSyncNever: SyncNever never syncs the
// preallocation, so a power cut may leave the file shorter with its
// unsynced batches: the cut batch is a torn tail, zeroed as before.
func TestCutPreallocatedFileUnderSyncNever(t *testing.T) {
	m := vfs.NewMem()
	path, data, ends := fiveBatches(t, m)
	m.SetBytes(path, bytes.Clone(data[:ends[3]+7]))
	l, rec, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20, Sync: SyncNever})
	require.NoError(t, err)
	assert.Equal(t, record.TailTorn, rec.Tail)
	assert.Equal(t, ends[3], rec.CutAt)
	assert.Equal(t, LSN(4), rec.Last)
	require.NoError(t, l.Close())
}

// TestZerosPastTheLastBatchAreNotDamage: a file cut inside the zeros after
// its last batch lost nothing (an extension a crash cut short looks so): it
// opens, and the log goes on.
func TestZerosPastTheLastBatchAreNotDamage(t *testing.T) {
	m := vfs.NewMem()
	path, data, ends := fiveBatches(t, m)
	m.SetBytes(path, bytes.Clone(data[:ends[4]+1]))
	l, rec, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, LSN(5), rec.Last)
	assert.Equal(t, LSN(6), appendWait(t, l, 6))
	checkEntries(t, readAll(t, l, 1), 1, 6)
	require.NoError(t, l.Close())
}

// TestBatchNeverFillsAFile: at least one zero byte (tailGuard) follows the
// last batch of every file, even for an entry that would fill the file
// exactly, so a file that ends right after a batch can only have been cut.
func TestBatchNeverFillsAFile(t *testing.T) {
	for _, fileBytes := range []int64{1 << 10, 4 << 10} {
		t.Run(fmt.Sprint(fileBytes), func(t *testing.T) {
			m := vfs.NewMem()
			opts := Options{FileBytes: fileBytes, InitialBytes: fileBytes}
			l, _ := open(t, m, opts)
			appendWait(t, l, 1)
			w := l.files[len(l.files)-1]
			// The payload whose batch frame would end exactly at the file's size.
			left := int(w.size.Load() - w.end - frameOverhead)
			n := left - 1 - uvarintLen(uint64(left))
			for 1+uvarintLen(uint64(n))+n < left {
				n++
			}
			require.Equal(t, left, 1+uvarintLen(uint64(n))+n, "an entry that fills the file exactly")
			tk, err := l.Append(3, bytes.Repeat([]byte{'f'}, n))
			require.NoError(t, err)
			require.NoError(t, tk.Wait())
			appendWait(t, l, 4)
			var paths []string
			for _, w := range l.files {
				if w.last != 0 {
					paths = append(paths, w.path)
				}
			}
			require.NoError(t, l.Close())
			for _, p := range paths {
				data := m.Bytes(p)
				require.NotEmpty(t, data)
				assert.Equal(t, byte(0), data[len(data)-1], "%s ends in a zero byte", p)
			}
			l2, _ := open(t, m, opts)
			got := readAll(t, l2, 1)
			require.Len(t, got, 3)
			assert.Len(t, got[1].Payload, n)
			require.NoError(t, l2.Close())
		})
	}
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// FuzzCutFile: a newest file cut anywhere is judged alike by Open and
// Inspect (one tail rule): a cut inside or right after the batches is
// ErrShortFile, a cut inside the header ErrCorrupt, a cut in the zeros after
// the last batch loses nothing; never a silent loss of a batch.
func FuzzCutFile(f *testing.F) {
	m := vfs.NewMem()
	_, data, ends := fiveBatchesF(f, m)
	for _, c := range []int64{0, 10, ends[0], ends[2] + 3, ends[4] - 1, ends[4], ends[4] + 1, int64(len(data))} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cut int64) {
		if cut < 0 || cut > int64(len(data)) {
			return
		}
		m := vfs.NewMem()
		p := testDir + "/0000000000000001.wal"
		m.SetBytes(p, bytes.Clone(data[:cut]))
		l, _, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20})
		in, ierr := Inspect(m, testDir, nil)
		require.NoError(t, ierr)
		switch {
		case cut > ends[4]:
			require.NoError(t, err)
			require.NoError(t, in.Err)
			checkEntries(t, readAll(t, l, 1), 1, 5)
			require.NoError(t, l.Close())
		case cut == 0:
			// An empty newest file (no header): nothing was ever in it.
			if err == nil {
				require.NoError(t, l.Close())
			}
		default:
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorIs(t, in.Err, ErrCorrupt)
			require.Equal(t, errors.Is(err, ErrShortFile), errors.Is(in.Err, ErrShortFile), "Open: %v; Inspect: %v", err, in.Err)
			require.Equal(t, data[:cut], m.Bytes(p), "nothing changed")
		}
	})
}
