package segment

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

func trimZeros(b []byte) []byte { return bytes.TrimRight(b, "\x00") }

// Issue 10, docs/format.md section 5 rule 2: a truncation keeps every non-zero byte it
// cuts. An incomplete last segment is a torn write; a full-length one that fails its
// checksum may also be media damage to an acknowledged append, and the report says so.
func TestTornTailBytesAreKept(t *testing.T) {
	orig := vfs.NewMem()
	lastStart, size := threeSegments(t, orig, Options{})
	full := orig.Bytes("/p/" + segName(1))
	flipped := append([]byte(nil), full...)
	flipped[size-3] ^= 0x20
	cases := []struct {
		name   string
		file   []byte
		qdir   string
		tail   record.Tail
		keptAt string
		words  string
	}{
		{"incomplete segment", full[:size-10], "", record.TailTorn, fmt.Sprintf("/p/%s.from-%d", segName(1), lastStart), "torn write: an incomplete segment"},
		{"partial header", full[:lastStart+20], "", record.TailTorn, fmt.Sprintf("/p/%s.from-%d", segName(1), lastStart), "torn write: an incomplete segment"},
		{"full-length segment failing its checksum", flipped, "", record.TailDamaged, fmt.Sprintf("/p/%s.from-%d", segName(1), lastStart), "torn write or damage to an acknowledged segment"},
		{"kept under the quarantine directory", flipped, "/data/quarantine/partitions", record.TailDamaged, fmt.Sprintf("/data/quarantine/partitions/p/%s.from-%d", segName(1), lastStart), "bytes kept at /data/quarantine/partitions/p/"},
		{"partial segment then zeros", append(append([]byte(nil), full[:lastStart+60]...), make([]byte, 500)...), "", record.TailDamaged, fmt.Sprintf("/p/%s.from-%d", segName(1), lastStart), "torn write or damage"},
		{"zeros only: nothing to keep", append(append([]byte(nil), full[:lastStart]...), make([]byte, 64)...), "", record.TailZeros, "", "zero bytes after the last whole segment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := orig.Crash(true)
			fs.SetBytes("/p/"+segName(1), tc.file)
			l, rep := openMem(t, fs, Options{QuarantineDir: tc.qdir})
			assert.Equal(t, int64(len(tc.file)-lastStart), rep.TruncatedBytes)
			assert.Equal(t, int64(lastStart), rep.TruncatedAt)
			assert.Equal(t, tc.tail, rep.Tail)
			assert.Equal(t, tc.keptAt, rep.KeptAt)
			assert.Contains(t, rep.TailText(), tc.words)
			assert.Len(t, fs.Bytes("/p/"+segName(1)), lastStart, "cut at the last whole segment")
			if tc.keptAt != "" {
				assert.Equal(t, trimZeros(tc.file[lastStart:]), fs.Bytes(tc.keptAt), "every non-zero byte cut is kept")
			}
			require.Len(t, readAll(t, l, 1), 8)
			require.NoError(t, l.Close())
			again, rep := openMem(t, fs, Options{QuarantineDir: tc.qdir})
			assert.False(t, rep.Repaired(), "the kept copy is not mistaken for a segment file")
			require.NoError(t, again.Close())
		})
	}
}

// The copy is durable before the cut: a crash (or a failed call) at any point of Open's
// recovery leaves the torn bytes in the segment file or in a whole copy, never in
// neither. Walks every call of the recovery on the strict crash twin.
func TestKeepingTheTornTailIsCrashSafe(t *testing.T) {
	setup := func() *vfs.Mem {
		fs := vfs.NewStrictMem("/")
		l, _, err := openLog(fs, "/data/partitions/p", Options{})
		require.NoError(t, err)
		_, err = l.Append(1, recs(0, 4, 60))
		require.NoError(t, err)
		_, err = l.Append(2, recs(4, 4, 60))
		require.NoError(t, err)
		require.NoError(t, l.Close())
		require.NoError(t, fs.SyncFS("/")) // the directory tree is durable, as the broker leaves it
		b := fs.Bytes("/data/partitions/p/" + segName(1))
		fs.SetBytes("/data/partitions/p/"+segName(1), b[:len(b)-7]) // a torn second segment
		return fs
	}
	opts := Options{QuarantineDir: "/data/quarantine/partitions"}
	seg := "/data/partitions/p/" + segName(1)
	torn := setup().Bytes(seg)
	h, err := parseHeader(torn)
	require.NoError(t, err)
	cut := int(h.size())
	kept := fmt.Sprintf("/data/quarantine/partitions/p/%s.from-%d", segName(1), cut)

	rec := errorfs.New(setup())
	rec.Record()
	_, _, err = openLog(rec, "/data/partitions/p", opts)
	require.NoError(t, err)
	trace := rec.Trace()
	steps := 0
	for i := 0; i <= len(trace); i++ { // i == len(trace): nothing fails, crash at the end
		if i < len(trace) && trace[i].Op == errorfs.OpRead {
			continue
		}
		steps++
		mem := setup()
		fs := errorfs.New(mem)
		msg := "crash after a whole recovery"
		if i < len(trace) {
			fs.Inject(errorfs.FaultAt(trace, i, unix.EIO))
			msg = fmt.Sprintf("failed call %d %s %s", i, trace[i].Op, trace[i].Path)
		}
		l, _, err := openLog(fs, "/data/partitions/p", opts)
		if err == nil {
			_ = l.Close()
		}
		crashed := mem.Crash(true)
		msg += fmt.Sprintf(" (open err %v)", err)
		segNow := crashed.Bytes(seg)
		if len(segNow) == len(torn) {
			assert.Equal(t, torn, segNow, msg)
		} else {
			require.Len(t, segNow, cut, msg)
			require.Equal(t, torn[cut:], crashed.Bytes(kept), "%s: cut only after a durable copy", msg)
		}
		l, rep, err := openLog(crashed, "/data/partitions/p", opts)
		require.NoError(t, err, msg)
		assert.Equal(t, uint64(5), l.NextOffset(), msg)
		if rep.TruncatedBytes > 0 {
			assert.NotEmpty(t, rep.KeptAt, msg)
		}
		require.NoError(t, l.Close())
	}
	assert.Greater(t, steps, 5, "the walk covered the copy, its syncs, the cut and its sync")
}

// A copy that cannot be made (a full disk) refuses the cut: Open fails and the file
// keeps its bytes for the next attempt.
func TestTornTailIsNotCutWhenItCannotBeKept(t *testing.T) {
	orig := vfs.NewMem()
	_, size := threeSegments(t, orig, Options{})
	mem := orig.Crash(true)
	full := mem.Bytes("/p/" + segName(1))
	mem.SetBytes("/p/"+segName(1), full[:size-10])
	fs := errorfs.New(mem)
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Under: ".from-", Err: unix.ENOSPC})
	_, _, err := openLog(fs, "/p", Options{})
	require.ErrorIs(t, err, unix.ENOSPC)
	assert.Contains(t, err.Error(), "keep the")
	assert.Equal(t, full[:size-10], mem.Bytes("/p/"+segName(1)))
	names, _ := mem.List("/p")
	for _, n := range names {
		assert.NotContains(t, n, ".from-", "no partial copy is left behind")
	}
}

// A torn tail met when a Log opened from a Summary is first used is reported through
// Options.OnRecover (Open's RecoveryReport is long gone by then).
func TestOnRecoverReportsALazyRepair(t *testing.T) {
	mem := vfs.NewMem()
	l, _, err := openLog(mem, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 4, 60))
	require.NoError(t, err)
	s := l.Summary()
	require.NoError(t, l.Close())
	b := mem.Bytes("/p/" + segName(1))
	mem.SetBytes("/p/"+segName(1), append(b, []byte("half a segment")...))

	var got *RecoveryReport
	lz := OpenSummary("/p", Options{FS: mem, OnRecover: func(dir string, rep *RecoveryReport) {
		assert.Equal(t, "/p", dir)
		got = rep
	}}, s)
	require.Nil(t, got, "nothing is read before the first use")
	require.Len(t, readAll(t, lz, 1), 4)
	require.NotNil(t, got)
	assert.Equal(t, int64(len("half a segment")), got.TruncatedBytes)
	assert.Equal(t, fmt.Sprintf("/p/%s.from-%d", segName(1), len(b)), got.KeptAt)
	require.NoError(t, lz.Close())
}
