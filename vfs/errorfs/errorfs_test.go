package errorfs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
)

// Skip and Count pick exactly which matching calls fail; Short writes half.
func TestSkipCountShort(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	fy := New(m)
	fy.Inject(Fault{Op: OpWrite, Under: "/d/", Skip: 1, Count: 1, Err: unix.ENOSPC, Short: true})
	f, err := fy.OpenFile("/d/a", os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	require.NoError(t, err)
	_, err = f.Write([]byte("ok"))
	require.NoError(t, err)
	n, err := f.Write([]byte("torn"))
	require.ErrorIs(t, err, unix.ENOSPC)
	require.Equal(t, 2, n, "a short write reports the bytes that landed")
	_, err = f.Write([]byte("!"))
	require.NoError(t, err)
	require.Equal(t, "okto!", string(m.Bytes("/d/a")))
}

// FaultAt fails exactly the chosen call of a recorded run.
func TestFaultAtReplaysOneBoundary(t *testing.T) {
	scenario := func(fsys vfs.FS) error {
		for i := 0; i < 3; i++ {
			f, err := fsys.OpenFile("/d/a", os.O_WRONLY|os.O_CREATE|os.O_APPEND)
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte{'a' + byte(i)}); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			f.Close()
		}
		return nil
	}
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	fy := New(m)
	fy.Record()
	require.NoError(t, scenario(fy))
	trace := fy.Trace()
	require.Len(t, trace, 9)
	require.Equal(t, Call{OpSync, "/d/a"}, trace[5])

	m = vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	fy = New(m)
	fy.Inject(FaultAt(trace, 5, unix.EIO))
	require.ErrorIs(t, scenario(fy), unix.EIO)
	require.Equal(t, "ab", string(m.Bytes("/d/a")))
	require.Equal(t, "a", string(m.Crash(false).Bytes("/d/a")))
}

// FSType answers for what FS wraps, so vfs.SyncFSTrusted judges the wrapped
// file system.
func TestFSTypeIsTheWrapped(t *testing.T) {
	m := vfs.NewMem()
	m.SetFSType(vfs.MagicExt4)
	assert.NoError(t, vfs.SyncFSTrusted(New(m), "/d"))
	m.SetFSType(vfs.MagicFUSE)
	err := vfs.SyncFSTrusted(New(m), "/d")
	require.ErrorIs(t, err, vfs.ErrSyncFSUntrusted)
	assert.Contains(t, err.Error(), "on fuse")
}
