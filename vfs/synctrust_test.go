package vfs

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// syncfs is trusted on ext4, xfs and btrfs only; a twin is tmpfs until told
// otherwise (errorfs.FS answers for what it wraps: vfs/errorfs).
func TestSyncFSTrusted(t *testing.T) {
	m := NewMem()
	err := SyncFSTrusted(m, "/d")
	require.ErrorIs(t, err, ErrSyncFSUntrusted)
	assert.Contains(t, err.Error(), "/d is on tmpfs, not ext4, xfs or btrfs")
	for magic, name := range map[int64]string{MagicExt4: "ext4", MagicXFS: "xfs", MagicBtrfs: "btrfs"} {
		m.SetFSType(magic)
		assert.NoError(t, SyncFSTrusted(m, "/d"), name)
		assert.Equal(t, name, TypeName(magic))
	}
	m.SetFSType(MagicFUSE)
	err = SyncFSTrusted(m, "/d")
	require.ErrorIs(t, err, ErrSyncFSUntrusted)
	assert.Contains(t, err.Error(), "on fuse")
	assert.Equal(t, "0x1234", TypeName(0x1234))
}

func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{"5.8.0": true, "5.10.0-18-amd64": true, "6.1.0": true, "6.18.44-fc-v1045": true,
		"5.7.19": false, "4.19.0-25-amd64": false, "5.8-rc1": true, "5": false, "x.y": false, "": false} {
		assert.Equal(t, want, kernelAtLeast(rel, 5, 8), rel)
	}
}

// The real file system's type comes from statfs.
func TestOSFSType(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	got, err := OS.(Typed).FSType(dir)
	require.NoError(t, err)
	assert.Equal(t, int64(st.Type), got)
}

// The probe syncs a file and the directory and leaves nothing behind (its
// failures: fault_test.go).
func TestProbeSync(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, ProbeSync(OS, dir))
	ok, err := Exists(OS, filepath.Join(dir, ProbeFile))
	require.NoError(t, err)
	assert.False(t, ok, "the probe file is removed")

	m := NewStrictMem("/d")
	require.NoError(t, ProbeSync(m, "/d"))
	assert.Nil(t, m.Crash(false).Bytes("/d/"+ProbeFile))

}
