package vfs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

func TestWriteFileAtomicCrashLeavesOldOrNew(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	require.NoError(t, vfs.WriteFileAtomic(m, "/data/f", []byte("old"), false))
	fy := errorfs.New(m)
	fy.Inject(errorfs.Fault{Op: errorfs.OpRename, Path: "/data/f", Err: unix.EIO})
	require.ErrorIs(t, vfs.WriteFileAtomic(fy, "/data/f", []byte("new"), false), unix.EIO)
	got, err := m.ReadFile("/data/f")
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	ok, err := vfs.Exists(m, "/data/f.tmp")
	require.NoError(t, err)
	require.False(t, ok, "the temporary file is removed on failure")
	fy.Clear()
	require.NoError(t, vfs.WriteFileAtomic(fy, "/data/f", []byte("new"), false))
	require.Equal(t, "new", string(m.Crash(false).Bytes("/data/f")))
}

// A file system answering EINVAL, ENOTSUP or EOPNOTSUPP to the probe's syncs
// is named unsupported, while another failure (EIO) is reported as itself.
func TestProbeSyncFailures(t *testing.T) {
	for _, tc := range []struct {
		op  errorfs.Op
		err error
		msg string
	}{{errorfs.OpSync, unix.EINVAL, "fdatasync /d/SYNC-PROBE: the file system does not support fsync"},
		{errorfs.OpSync, unix.EOPNOTSUPP, "fdatasync /d/SYNC-PROBE: the file system does not support fsync"},
		{errorfs.OpSyncDir, unix.ENOTSUP, "fsync /d: the file system does not support fsync"}} {
		f := errorfs.New(vfs.NewStrictMem("/d"))
		f.Inject(errorfs.Fault{Op: tc.op, Err: tc.err})
		err := vfs.ProbeSync(f, "/d")
		require.ErrorIs(t, err, vfs.ErrSyncUnsupported, tc.msg)
		require.ErrorIs(t, err, tc.err)
		assert.Contains(t, err.Error(), tc.msg)
	}
	f := errorfs.New(vfs.NewStrictMem("/d"))
	f.Inject(errorfs.Fault{Op: errorfs.OpSync})
	err := vfs.ProbeSync(f, "/d")
	require.ErrorIs(t, err, unix.EIO)
	assert.NotErrorIs(t, err, vfs.ErrSyncUnsupported)
}
