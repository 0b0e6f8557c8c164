package vfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// statfs(2) f_type magics (linux/magic.h) of the file systems whose
// syncfs(2) is known to write back every dirty file and commit the journal:
// they implement sync_fs. ext2, ext3 and ext4 share one magic.
const (
	MagicExt4  int64 = 0xEF53
	MagicXFS   int64 = 0x58465342
	MagicBtrfs int64 = 0x9123683E
	MagicTmpfs int64 = 0x01021994
	MagicFUSE  int64 = 0x65735546
	MagicNFS   int64 = 0x6969
)

var syncFSTrusted = map[int64]string{MagicExt4: "ext4", MagicXFS: "xfs", MagicBtrfs: "btrfs"}

var typeNames = map[int64]string{MagicTmpfs: "tmpfs", MagicFUSE: "fuse", MagicNFS: "nfs", 0x01021997: "v9fs",
	0xFF534D42: "cifs", 0x2FC12FC1: "zfs", 0x794C7630: "overlayfs", 0x4D44: "vfat", 0x5346544E: "ntfs", 0xF2F52010: "f2fs"}

// TypeName names a statfs f_type magic ("ext4", "tmpfs", ..., or its hex).
func TypeName(magic int64) string {
	if n, ok := syncFSTrusted[magic]; ok {
		return n
	}
	if n, ok := typeNames[magic]; ok {
		return n
	}
	return fmt.Sprintf("%#x", magic)
}

// Typed is implemented by an FS that can tell which kind of file system
// holds a directory: OS (statfs(2)) and Mem (SetFSType).
type Typed interface {
	// FSType returns the statfs(2) f_type of the file system holding dir.
	FSType(dir string) (int64, error)
}

// ErrSyncFSUntrusted: syncfs(2) on this file system is not known to make
// written data durable (SyncFSTrusted).
var ErrSyncFSUntrusted = errors.New("syncfs is not known to make this file system durable")

// ErrSyncUnsupported: the file system answered a sync with "not supported"
// (EINVAL, ENOTSUP/EOPNOTSUPP, ENOSYS), so nothing written to it can be made
// durable (ProbeSync).
var ErrSyncUnsupported = errors.New("the file system does not support fsync")

// SyncFSTrusted returns nil when syncfs(2) on the file system holding dir is
// known to make every file written there durable and to report writeback
// errors: ext2/3/4, xfs or btrfs (statfs f_type) and, on the real file
// system, Linux 5.8 or later (older kernels return 0 from syncfs after a
// writeback error). syncfs reaches a file system only through its sync_fs
// method; without one (FUSE, some network file systems) it returns 0 having
// synced nothing (issue 21).
//
// Errors: ErrSyncFSUntrusted wrapped with the reason (the type found, or the
// kernel release), or the statfs error.
func SyncFSTrusted(fsys FS, dir string) error {
	t, ok := fsys.(Typed)
	if !ok {
		return fmt.Errorf("%s: cannot tell its file system type: %w", dir, ErrSyncFSUntrusted)
	}
	magic, err := t.FSType(dir)
	if err != nil {
		return fmt.Errorf("%s: statfs: %w", dir, err)
	}
	if _, ok := syncFSTrusted[magic]; !ok {
		return fmt.Errorf("%s is on %s, not ext4, xfs or btrfs: %w", dir, TypeName(magic), ErrSyncFSUntrusted)
	}
	if _, real := fsys.(osFS); real {
		var u unix.Utsname
		if err := unix.Uname(&u); err != nil {
			return fmt.Errorf("uname: %w", err)
		}
		if rel := unix.ByteSliceToString(u.Release[:]); !kernelAtLeast(rel, 5, 8) {
			//lint:ignore ST1005 the message starts with a proper noun (Linux)
			return fmt.Errorf("Linux %s reports no writeback error from syncfs (5.8 and later do): %w", rel, ErrSyncFSUntrusted)
		}
	}
	return nil
}

// kernelAtLeast reports whether a kernel release ("6.1.0-18-amd64") is
// major.minor or later; an unreadable release is not.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	min := parts[1]
	if i := strings.IndexFunc(min, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		min = min[:i]
	}
	mn, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mn >= minor
}

// ProbeFile is the file ProbeSync writes in the directory it probes and
// removes again.
const ProbeFile = "SYNC-PROBE"

// ProbeSync checks that dir's file system can make a write durable: it
// writes ProbeFile, fdatasyncs it, fsyncs dir (on OS: the directory's own
// fsync, its EINVAL not forgiven as OS.SyncDir does), removes the file and
// syncs dir again. A file system without fsync answers EINVAL (or ENOTSUP,
// EOPNOTSUPP, ENOSYS) instead of syncing, and every promise of durability on
// it would be false.
//
// Errors: ErrSyncUnsupported wrapped with the call and the errno when the
// file system says so; any other error of the steps, wrapped with the path.
func ProbeSync(fsys FS, dir string) error {
	name := filepath.Join(dir, ProbeFile)
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("sync probe %s: %w", name, err)
	}
	_, err = f.Write([]byte("comb sync probe\n"))
	if err == nil {
		if err = f.Sync(); err != nil {
			err = unsupported("fdatasync "+name, err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sync probe %s: %w", name, cerr)
	}
	if err == nil {
		if err = probeDir(fsys, dir); err != nil {
			err = unsupported("fsync "+dir, err)
		}
	}
	if rerr := fsys.Remove(name); err == nil && rerr != nil {
		err = fmt.Errorf("sync probe %s: %w", name, rerr)
	}
	if err == nil {
		if err = fsys.SyncDir(dir); err != nil {
			err = unsupported("fsync "+dir, err)
		}
	}
	return err
}

// probeDir syncs dir; on the real file system without OS.SyncDir's
// leniency, which takes EINVAL from a directory fsync for "nothing to do".
func probeDir(fsys FS, dir string) error {
	if _, real := fsys.(osFS); !real {
		return fsys.SyncDir(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func unsupported(call string, err error) error {
	for _, e := range []error{unix.EINVAL, unix.ENOTSUP, unix.EOPNOTSUPP, unix.ENOSYS} {
		if errors.Is(err, e) {
			return fmt.Errorf("%s: %w: %w", call, ErrSyncUnsupported, err)
		}
	}
	return fmt.Errorf("sync probe: %s: %w", call, err)
}

func (osFS) FSType(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}

// FSType returns the type SetFSType set, MagicTmpfs by default.
func (m *Mem) FSType(string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fsType == 0 {
		return MagicTmpfs, nil
	}
	return m.fsType, nil
}

// SetFSType makes FSType answer magic (a statfs f_type, e.g. MagicExt4), so
// tests can give the twin the type of a file system SyncFSTrusted trusts.
func (m *Mem) SetFSType(magic int64) {
	m.mu.Lock()
	m.fsType = magic
	m.mu.Unlock()
}
