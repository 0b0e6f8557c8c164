package segment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// txids lists the transaction ids of msgs.
func txidsOf(msgs []Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TransactionID
	}
	return out
}

// issue 21: a segment taken back leaves the log as before it: the file cut
// to the previous end, NextOffset and the dedup lookups as before, and the
// next append takes the same offsets; a reopen sees exactly what was kept.
func TestUnappendTakesBackTheLastSegment(t *testing.T) {
	for _, loadDedup := range []bool{false, true} {
		mem := vfs.NewMem()
		l, _ := openMem(t, mem, Options{})
		_, err := l.Append(10, recs(1, 3, 40))
		require.NoError(t, err)
		if loadDedup {
			_, _, ok, err := l.FindTransaction("tx-1")
			require.NoError(t, err)
			require.True(t, ok)
		}
		size := len(mem.Bytes("/p/" + segName(1)))
		first, err := l.Append(20, recs(4, 2, 40))
		require.NoError(t, err)
		require.Equal(t, uint64(4), first)

		require.NoError(t, l.Unappend(first))
		assert.Equal(t, uint64(4), l.NextOffset())
		assert.Equal(t, int64(10), l.LastTimestamp())
		assert.Len(t, mem.Bytes("/p/"+segName(1)), size, "the file is cut back to where the segment began")
		_, _, ok, err := l.FindTransaction("tx-4")
		require.NoError(t, err)
		assert.False(t, ok, "dedup forgets the ids taken back")
		assert.Equal(t, []string{"tx-1", "tx-2", "tx-3"}, txidsOf(readAll(t, l, 1)))

		// The offsets are taken again, by other records: the dedup index
		// must find these, not the ones taken back.
		again, err := l.Append(30, []Record{rec(9, 40)})
		require.NoError(t, err)
		assert.Equal(t, uint64(4), again)
		off, _, ok, err := l.FindTransaction("tx-9")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, uint64(4), off)
		_, _, ok, err = l.FindTransaction("tx-5")
		require.NoError(t, err)
		assert.False(t, ok)
		require.NoError(t, l.Close())

		l, rep := openMem(t, mem, Options{})
		assert.False(t, rep.Repaired(), "a clean cut: nothing to repair")
		assert.Equal(t, []string{"tx-1", "tx-2", "tx-3", "tx-9"}, txidsOf(readAll(t, l, 1)))
		off, _, ok, err = l.FindTransaction("tx-9")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, uint64(4), off)
		require.NoError(t, l.Close())
	}
}

// The first segment of a file a rotation made: the file stays, empty, and
// the next append fills it.
func TestUnappendAfterRotation(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openMem(t, mem, Options{MaxFileBytes: 100})
	_, err := l.Append(10, recs(1, 2, 60))
	require.NoError(t, err)
	first, err := l.Append(20, recs(3, 2, 60))
	require.NoError(t, err)
	require.Len(t, mem.Bytes("/p/"+segName(3)), int(l.files[1].size), "the append rotated into a new file")
	require.NoError(t, l.Unappend(first))
	assert.Empty(t, mem.Bytes("/p/"+segName(3)))
	assert.Equal(t, uint64(3), l.NextOffset())
	assert.Equal(t, int64(10), l.LastTimestamp(), "the last timestamp of the file before")
	again, err := l.Append(30, []Record{rec(7, 10)})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), again)
	require.NoError(t, l.Close())
	l, _ = openMem(t, mem, Options{MaxFileBytes: 100})
	assert.Equal(t, []string{"tx-1", "tx-2", "tx-7"}, txidsOf(readAll(t, l, 1)))
	require.NoError(t, l.Close())
}

// Only the last segment can be taken back; anything else changes nothing.
func TestUnappendNotLast(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openMem(t, mem, Options{})
	first, err := l.Append(10, recs(1, 2, 20))
	require.NoError(t, err)
	_, err = l.Append(20, recs(3, 2, 20))
	require.NoError(t, err)
	require.ErrorIs(t, l.Unappend(first), ErrNotLast)
	require.ErrorIs(t, l.Unappend(99), ErrNotLast)
	assert.Equal(t, uint64(5), l.NextOffset())
	assert.Equal(t, []string{"tx-1", "tx-2", "tx-3", "tx-4"}, txidsOf(readAll(t, l, 1)))
	require.NoError(t, l.Close())
}

// A crash after the cut (not synced): recovery finds either the cut file or
// the segment still there, whole; with the caller's keepBelow (no commit-log
// entry covers the segment) it keeps exactly the records before it.
func TestUnappendThenCrash(t *testing.T) {
	mem := vfs.NewMem()
	l, _ := openMem(t, mem, Options{})
	_, err := l.Append(10, recs(1, 2, 20))
	require.NoError(t, err)
	first, err := l.Append(20, recs(3, 2, 20))
	require.NoError(t, err)
	require.NoError(t, l.Sync(), "synced with the segment in it: the cut is not durable yet")
	require.NoError(t, l.Unappend(first))

	crashed := mem.Crash(false)
	l2, _, err := openLogFrom(crashed, "/p", Options{}, first)
	require.NoError(t, err)
	assert.Equal(t, []string{"tx-1", "tx-2"}, txidsOf(readAll(t, l2, 1)))
	assert.Equal(t, first, l2.NextOffset())
	require.NoError(t, l2.Close())
}

// Found by fsck/powertest (seed 302): Unappend failing to cut the file back
// made the failure sticky while it held mu, and a sync holding syncMu waited
// for mu: a deadlock that stopped every append and flush pass of the log.
// The failure is now taken after mu is released. The test holds syncMu as a
// sync does, lets Unappend's truncate fail, and requires mu to come free.
func TestUnappendWhoseCutFailsDoesNotHoldMuForSyncMu(t *testing.T) {
	mem := vfs.NewMem()
	fs := errorfs.New(mem)
	l, _, err := openLog(fs, "/p", Options{})
	require.NoError(t, err)
	_, err = l.Append(10, recs(1, 3, 40))
	require.NoError(t, err)
	first, err := l.Append(20, recs(4, 2, 40))
	require.NoError(t, err)
	seg := "/p/" + segName(1)
	fs.Inject(errorfs.Fault{Op: errorfs.OpTruncate, Path: seg, Count: 1})
	fs.Record()

	l.syncMu.Lock() // as syncNow holds it before it takes mu
	done := make(chan error, 1)
	go func() { done <- l.Unappend(first) }()
	truncated := func() bool {
		for _, c := range fs.Trace() {
			if c.Op == errorfs.OpTruncate && c.Path == seg {
				return true
			}
		}
		return false
	}
	require.Eventually(t, truncated, 10*time.Second, time.Millisecond, "Unappend reached the cut")
	require.Eventually(t, func() bool {
		if l.mu.TryRLock() {
			l.mu.RUnlock()
			return true
		}
		return false
	}, 10*time.Second, time.Millisecond, "mu is free while Unappend waits for syncMu")
	l.syncMu.Unlock()
	err = <-done
	require.ErrorIs(t, err, ErrWriteFailed)
	assert.ErrorIs(t, l.failed(), ErrWriteFailed, "the failed cut is sticky")
}
