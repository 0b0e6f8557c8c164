package segment

import (
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errInjectedEIO = errors.New("injected EIO")

// failOnceFS fails the first fdatasync of any file, then succeeds: what Linux
// does after it dropped the dirty pages of a failed writeback.
func failOnceFS() *vfs.Faulty {
	f := vfs.NewFaulty(vfs.NewMem())
	f.Inject(vfs.Fault{Op: vfs.OpSync, Count: 1, Err: errInjectedEIO})
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

	c := NewCommitter(SyncAlways, 0)
	assert.ErrorIs(t, c.Commit(l), ErrSyncFailed, "group commit reports it too")
	require.NoError(t, c.Close())
}
