package segment

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// dedupLog writes n records with transaction ids tx-0 .. tx-(n-1) in segments of
// perSeg, loads the dedup index (so dedup.idx holds an entry per id) and closes.
func dedupLog(t *testing.T, n, perSeg int) *vfs.Mem {
	t.Helper()
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	for i := 0; i < n; i += perSeg {
		_, err := l.Append(int64(i), recs(i, perSeg, 20))
		require.NoError(t, err)
		_, _, _, err = l.FindTransaction("load")
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	require.Len(t, fs.Bytes("/p/"+dedupFileName), index.DedupHeaderSize+n*index.DedupEntrySize)
	return fs
}

// requireEveryID checks that each of tx-0 .. tx-(n-1) is found at its offset (i+1):
// a retried push of any of them would be answered "duplicate", never stored again.
func requireEveryID(t *testing.T, l *Log, n int, msg string) {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("tx-%d", i)
	}
	got := map[int]uint64{}
	require.NoError(t, l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) { got[i] = off }))
	for i := range ids {
		require.Equalf(t, uint64(i+1), got[i], "%s: %s", msg, ids[i])
	}
}

// Issue 10 (8-integrity part 5): a flipped bit anywhere in dedup.idx (a hash, an
// offset, a check, the header) must never let a known transaction id through as new.
// Every bit of the file is flipped in turn; each time the load notices, says so
// through OnRecover, re-indexes from the segments and leaves a whole file behind.
func TestDedupEveryBitFlipIsRebuiltNeverMissed(t *testing.T) {
	const n = 12
	base := dedupLog(t, n, 3)
	orig := base.Bytes("/p/" + dedupFileName)
	for pos := 0; pos < len(orig); pos++ {
		for bit := 0; bit < 8; bit++ {
			fs := base.Crash(true)
			b := append([]byte(nil), orig...)
			b[pos] ^= 1 << bit
			fs.SetBytes("/p/"+dedupFileName, b)
			var why string
			l, _ := openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
			msg := fmt.Sprintf("byte %d bit %d", pos, bit)
			requireEveryID(t, l, n, msg)
			require.NotEmptyf(t, why, "%s: the rebuild is reported", msg)
			require.NoError(t, l.Close())
			require.Equalf(t, orig, fs.Bytes("/p/"+dedupFileName), "%s: the file is whole again", msg)
		}
	}
}

func TestDedupReportWording(t *testing.T) {
	base := dedupLog(t, 12, 3)
	orig := base.Bytes("/p/" + dedupFileName)
	entry := func(i int) int { return index.DedupHeaderSize + i*index.DedupEntrySize }
	v1 := append([]byte("CMBD\x01"), make([]byte, index.DedupHeaderSize-5+16)...)
	var foreign [][2]uint64 // entries of another log: other ids at the same offsets
	for i := 0; i < 12; i++ {
		foreign = append(foreign, [2]uint64{index.HashTxn(fmt.Sprintf("other-%d", i)), uint64(i + 1)})
	}
	cases := []struct {
		name string
		file []byte
		want string // "" = nothing reported
	}{
		{"a whole file of another log", dedupBytes(foreign...), "dedup.idx rebuilt from the segments: its entry for offset 12 names another transaction id than the record there, so the file does not describe this log"},
		{"whole file", orig, ""},
		{"entries past the log's end are a crash's leftovers", append(append([]byte(nil), orig...),
			index.AppendDedupEntry(nil, ptr(index.DedupChainAt(orig, int64(len(orig)))), 7, 13)...), ""},
		{"partial last entry: a torn append", orig[:len(orig)-5], ""},
		{"a flipped bit mid-file is damage", flip(orig, entry(4)+2), fmt.Sprintf("dedup.idx damaged: the entry at byte %d fails its check (entry check fails) and verified entries follow it at byte %d", entry(4), entry(5))},
		{"a flipped bit in the last entry is a torn write or damage", flip(orig, entry(11)+9), fmt.Sprintf("dedup.idx: the last entries from byte %d fail their checks (entry check fails): a torn write or damage", entry(11))},
		{"a version 1 file", v1, "dedup.idx rebuilt from the segments: index: dedup file of another version: version 1, this comb reads 3"},
		{"a damaged header", flip(orig, 30), "dedup.idx rebuilt from the segments: index: bad dedup file header: check"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := base.Crash(true)
			fs.SetBytes("/p/"+dedupFileName, tc.file)
			var why string
			l, _ := openMem(t, fs, Options{OnRecover: func(_ string, rep *RecoveryReport) { why = rep.DedupRebuilt }})
			requireEveryID(t, l, 12, tc.name)
			if tc.want == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tc.want)
			}
			require.NoError(t, l.Close())
			assert.Equal(t, orig, fs.Bytes("/p/"+dedupFileName))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func flip(b []byte, at int) []byte {
	c := append([]byte(nil), b...)
	c[at] ^= 0x04
	return c
}

// A failed dedup write is cut back and retried (a full disk is an error, not a state);
// when the cut fails too the file is written no more until the next load, which cuts
// the partial entry it ends in. Either way no id is ever missed.
func TestDedupWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cutFails bool
	}{{"cut back and retried", false}, {"cut fails: file given up until reloaded", true}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fs := errorfs.New(mem)
			l, _, err := openLog(fs, "/p", Options{})
			require.NoError(t, err)
			_, err = l.Append(1, recs(0, 5, 20))
			require.NoError(t, err)
			_, _, _, err = l.FindTransaction("load") // writes 5 entries
			require.NoError(t, err)
			path := "/p/" + dedupFileName
			good := len(mem.Bytes(path))
			fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Path: path, Count: 1, Short: true, Err: unix.ENOSPC})
			if tc.cutFails {
				fs.Inject(errorfs.Fault{Op: errorfs.OpTruncate, Path: path, Count: 1})
			}
			_, err = l.Append(2, recs(5, 5, 20))
			require.NoError(t, err)
			err = l.dedup.Flush()
			require.ErrorIs(t, err, unix.ENOSPC)
			if tc.cutFails {
				assert.Len(t, mem.Bytes(path), good+5*index.DedupEntrySize/2, "half a write stays behind")
			} else {
				assert.Len(t, mem.Bytes(path), good, "cut back to the last whole entry")
			}
			_, err = l.Append(3, recs(10, 5, 20))
			require.NoError(t, err)
			requireEveryID(t, l, 15, "in memory")
			require.NoError(t, l.Close())
			b := mem.Bytes(path)
			if tc.cutFails {
				s, err := index.ScanDedup(b, nil)
				require.NoError(t, err)
				assert.Equal(t, 7, s.Entries, "the two whole entries of the half write verify; nothing was appended after it")
				assert.Equal(t, record.TailTorn, s.Tail)
			} else {
				assert.Len(t, b, index.DedupHeaderSize+15*index.DedupEntrySize, "the pending entries were written by the retry")
			}
			l, _ = openMem(t, mem, Options{})
			requireEveryID(t, l, 15, "after reopening")
			require.NoError(t, l.Close())
		})
	}
}
