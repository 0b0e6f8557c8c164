package segment

import (
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var errInjectedEIO = errors.New("injected EIO")

// failOnceFS fails the first fdatasync of any file, then succeeds: what Linux
// does after it dropped the dirty pages of a failed writeback.
func failOnceFS() *errorfs.FS {
	f := errorfs.New(vfs.NewMem())
	f.Inject(errorfs.Fault{Op: errorfs.OpSync, Count: 1, Err: errInjectedEIO})
	return f
}

// A failed fdatasync is sticky: no later Sync may report the log durable, and
// Append refuses, until the log is reopened (which verifies its tail again).
func TestSyncFailureIsSticky(t *testing.T) {
	fs := failOnceFS()
	l, _, err := openLog(fs, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)

	err = l.Sync()
	require.ErrorIs(t, err, errInjectedEIO)
	assert.ErrorIs(t, err, ErrSyncFailed)

	err = l.Sync()
	assert.ErrorIs(t, err, ErrSyncFailed, "the second fdatasync would succeed, but the first one's pages may be gone")
	_, err = l.Append(2, recs(3, 1, 10))
	assert.ErrorIs(t, err, ErrSyncFailed, "appends are refused after a failed sync")

	c := NewCommitter()
	c.Mark(l)
	assert.ErrorIs(t, c.Flush(), ErrSyncFailed, "the flush pass reports it too")
	require.NoError(t, c.Close())
}

// Issue 10: a failed append is cut back to the file's previous end, so the log stays
// usable and the same append can be retried (a full disk is an error, not a state).
func TestFailedAppendIsCutBackAndRetryable(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.New(mem)
	l, _, err := openLog(fs, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	seg := "/p/" + segName(1)
	size := len(mem.Bytes(seg))

	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Path: seg, Count: 1, Short: true, Err: unix.ENOSPC})
	_, err = l.Append(2, recs(3, 2, 10))
	require.ErrorIs(t, err, unix.ENOSPC)
	assert.NotErrorIs(t, err, ErrWriteFailed)
	assert.Len(t, mem.Bytes(seg), size, "the half-written segment was cut")
	assert.Equal(t, uint64(4), l.NextOffset(), "nothing was published")

	off, err := l.Append(2, recs(3, 2, 10))
	require.NoError(t, err, "the retry succeeds")
	assert.Equal(t, uint64(4), off)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	l, rep := openMem(t, mem, Options{})
	assert.False(t, rep.Repaired())
	got := readAll(t, l, 1)
	require.Len(t, got, 5)
	for i, m := range got {
		requireRecord(t, rec(i, 10), m)
	}
	require.NoError(t, l.Close())
}

// When the cut fails too, the file may end in a partial segment: the log refuses every
// write until reopened (sticky, like ErrSyncFailed), so it never appends after garbage,
// and reopening cuts the partial segment as a torn tail.
func TestFailedAppendThatCannotBeCutBackIsSticky(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.New(mem)
	l, _, err := openLog(fs, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	seg := "/p/" + segName(1)
	size := len(mem.Bytes(seg))

	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Path: seg, Count: 1, Short: true, Err: unix.EIO})
	fs.Inject(errorfs.Fault{Op: errorfs.OpTruncate, Path: seg, Count: 1, Err: unix.EIO})
	_, err = l.Append(2, recs(3, 2, 10))
	require.ErrorIs(t, err, ErrWriteFailed)
	assert.Greater(t, len(mem.Bytes(seg)), size, "half a segment stays behind")

	_, err = l.Append(3, recs(5, 1, 10))
	assert.ErrorIs(t, err, ErrWriteFailed, "no append after the garbage")
	assert.ErrorIs(t, l.Sync(), ErrWriteFailed)
	c := NewCommitter()
	c.Mark(l)
	assert.ErrorIs(t, c.Flush(), ErrWriteFailed)
	require.NoError(t, c.Close())
	_ = l.Close()

	l, rep := openMem(t, mem, Options{})
	assert.Equal(t, int64(size), rep.TruncatedAt, "the partial segment is cut as a torn tail")
	assert.Equal(t, uint64(4), l.NextOffset())
	require.Len(t, readAll(t, l, 1), 3)
	_, err = l.Append(4, recs(3, 1, 10))
	require.NoError(t, err, "a reopened log appends again")
	require.NoError(t, l.Close())
}

// The crash twin's capacity: pushing into a full disk fails with ENOSPC and leaves the
// log exactly as it was; once space is freed the log appends again, and everything
// acknowledged (synced) before, between and after survives a crash.
func TestDiskFullIsAnErrorNotAState(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openMem(t, mem, Options{})
	mem.SetCapacity(2000)
	var acked []int
	n, full := 0, 0
	for ; n < 100 && full < 3; n++ {
		_, err := l.Append(int64(n), recs(n, 1, 100))
		if err != nil {
			require.ErrorIs(t, err, unix.ENOSPC)
			full++
			n--
			continue
		}
		require.NoError(t, l.Sync())
		acked = append(acked, n)
	}
	require.Equal(t, 3, full, "the disk filled up")
	assert.LessOrEqual(t, mem.Used(), int64(2000))
	segBytes := len(mem.Bytes("/p/" + segName(1)))
	mem.SetCapacity(0)
	for i := 0; i < 3; i++ {
		_, err := l.Append(int64(n), recs(n, 1, 100))
		require.NoError(t, err)
		require.NoError(t, l.Sync())
		acked = append(acked, n)
		n++
	}
	assert.Greater(t, len(mem.Bytes("/p/"+segName(1))), segBytes)
	crashed := mem.Crash(false)
	l2, rep := openMem(t, crashed, Options{})
	assert.Zero(t, rep.TruncatedBytes, "no partial segment was ever left behind")
	got := readAll(t, l2, 1)
	require.Len(t, got, len(acked))
	for i, m := range got {
		requireRecord(t, rec(acked[i], 100), m)
	}
	require.NoError(t, l2.Close())
	_ = l.Close()
}
