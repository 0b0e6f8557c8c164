package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func writeFile(t *testing.T, fsys FS, name string, data []byte, sync bool) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

// A power loss keeps the bytes of the last Sync, nothing written after it.
func TestMemCrashKeepsSyncedBytesOnly(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	writeFile(t, m, "/d/a", []byte("synced"), true)
	writeFile(t, m, "/d/a", []byte("+lost"), false)
	require.Equal(t, "synced+lost", string(m.Bytes("/d/a")))
	require.Equal(t, "synced", string(m.Crash(false).Bytes("/d/a")))
}

// In a strict twin a new name needs its directory synced to survive; a
// rename without SyncDir comes back as the old name.
func TestStrictMemNamesNeedSyncDir(t *testing.T) {
	m := NewStrictMem("/data")
	require.NoError(t, m.MkdirAll("/data/p"))
	writeFile(t, m, "/data/p/x", []byte("x"), true)
	c := m.Crash(false)
	_, err := c.List("/data/p")
	require.ErrorIs(t, err, fs.ErrNotExist, "a directory whose parent was never synced is gone")

	require.NoError(t, m.SyncDir("/data"))
	require.Nil(t, m.Crash(false).Bytes("/data/p/x"), "file name not durable yet")
	require.NoError(t, m.SyncDir("/data/p"))
	require.Equal(t, "x", string(m.Crash(false).Bytes("/data/p/x")))

	require.NoError(t, m.Rename("/data/p/x", "/data/p/y"))
	c = m.Crash(false)
	require.Equal(t, "x", string(c.Bytes("/data/p/x")))
	require.Nil(t, c.Bytes("/data/p/y"))
	require.NoError(t, m.SyncDir("/data/p"))
	c = m.Crash(false)
	require.Nil(t, c.Bytes("/data/p/x"))
	require.Equal(t, "x", string(c.Bytes("/data/p/y")))
}

// A twin modelling a file system without sync_fs: SyncFS answers nil and a
// power loss still drops every byte and name only it covered; Sync and
// SyncDir still count, and the crashed twin keeps the setting.
func TestMemSyncFSNoopMakesNothingDurable(t *testing.T) {
	m := NewStrictMem("/data")
	m.SetSyncFSNoop(true)
	writeFile(t, m, "/data/a", []byte("synced"), true)
	require.NoError(t, m.SyncDir("/data"))
	require.NoError(t, m.MkdirAll("/data/p"))
	writeFile(t, m, "/data/a", []byte("+lost"), false)
	writeFile(t, m, "/data/p/x", []byte("x"), false)
	require.NoError(t, m.SyncFS("/data"))
	c := m.Crash(false)
	require.Equal(t, "synced", string(c.Bytes("/data/a")))
	_, err := c.List("/data/p")
	require.ErrorIs(t, err, fs.ErrNotExist, "the new directory only SyncFS covered is gone")

	writeFile(t, c, "/data/a", []byte("+lost again"), false)
	require.NoError(t, c.SyncFS("/data"))
	require.Equal(t, "synced", string(c.Crash(false).Bytes("/data/a")), "the crashed twin keeps the no-op SyncFS")

	m.SetSyncFSNoop(false)
	require.NoError(t, m.SyncFS("/data"))
	c = m.Crash(false)
	require.Equal(t, "synced+lost", string(c.Bytes("/data/a")))
	require.Equal(t, "x", string(c.Bytes("/data/p/x")))
}

// A full disk writes what fits and answers ENOSPC; freeing space helps.
func TestMemCapacity(t *testing.T) {
	m := NewMem()
	require.NoError(t, m.MkdirAll("/d"))
	m.SetCapacity(10)
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE)
	require.NoError(t, err)
	n, err := f.WriteAt([]byte("0123456789abc"), 0)
	require.Equal(t, 10, n)
	require.ErrorIs(t, err, unix.ENOSPC)
	n, err = f.WriteAt([]byte("XY"), 2)
	require.NoError(t, err, "overwriting allocated bytes needs no space")
	require.Equal(t, 2, n)
	require.ErrorIs(t, f.Truncate(20), unix.ENOSPC)
	require.NoError(t, f.Truncate(4))
	require.Equal(t, int64(4), m.Used())
	n, err = f.WriteAt([]byte("456789"), 4)
	require.NoError(t, err)
	require.Equal(t, 6, n)
	got, err := m.ReadFile("/d/a")
	require.NoError(t, err)
	require.Equal(t, "01XY456789", string(got))
	require.NoError(t, f.Close())
	require.NoError(t, m.Remove("/d/a"))
	require.Equal(t, int64(0), m.Used())
}

func TestOSMappingAndFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x.idx")
	mp, err := OS.OpenMapped(name)
	require.NoError(t, err)
	b, err := mp.Map(64)
	require.NoError(t, err)
	copy(b, "hello")
	require.NoError(t, mp.Close())
	got, err := OS.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, 64, len(got))
	require.Equal(t, "hello", string(got[:5]))

	f, err := OS.OpenFile(filepath.Join(dir, "y"), os.O_RDWR|os.O_CREATE)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("abc"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	size, err := f.Size()
	require.NoError(t, err)
	require.Equal(t, int64(3), size)
	require.NoError(t, f.Close())
	names, err := OS.List(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"x.idx", "y"}, names)
	_, err = OS.OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY)
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestLock(t *testing.T) {
	for name, fsys := range map[string]FS{"mem": NewMem(), "os": OS} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "LOCK")
			if fsys != OS {
				path = "/d/LOCK"
			}
			l, err := fsys.Lock(path)
			require.NoError(t, err)
			_, err = fsys.Lock(path)
			require.ErrorIs(t, err, ErrLocked, "flock conflicts between two opens, even in one process")
			require.NoError(t, l.Close())
			l, err = fsys.Lock(path)
			require.NoError(t, err, "free again once closed")
			require.NoError(t, l.Close())
		})
	}
}
