package segment

import (
	"os"
	"path/filepath"

	"github.com/combmq/comb/vfs"
)

// fileSystem is the seam between the log and the disk (package vfs): vfs.OS
// in production, vfs.Mem (the crash-simulating twin) and errorfs.FS (the
// error-injecting one) in tests. Options.FS picks it.
type fileSystem = vfs.FS

// file is an open segment or dedup file; segment code only appends to it.
type file = vfs.File

// openAppend opens a segment or dedup file for reading and appending,
// creating it when create is set.
func openAppend(fsys fileSystem, name string, create bool) (file, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	return fsys.OpenFile(name, flag)
}

// fsOf returns the file system o names, vfs.OS when none.
func (o Options) fsOf() fileSystem {
	if o.FS == nil {
		return vfs.OS
	}
	return o.FS
}

// join is filepath.Join for the hot path's few call sites.
func join(dir, name string) string { return filepath.Join(dir, name) }
