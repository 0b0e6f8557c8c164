package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is the seam between comb's storage packages and the disk. Paths are
// plain file paths; every method is safe for concurrent use.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags (os.O_RDONLY, os.O_WRONLY,
	// os.O_RDWR, os.O_APPEND, os.O_CREATE, os.O_EXCL, os.O_TRUNC). A missing
	// file without os.O_CREATE gives an error satisfying
	// errors.Is(err, fs.ErrNotExist).
	OpenFile(name string, flag int) (File, error)
	// OpenMapped opens (creating) name as a memory-mapped file.
	OpenMapped(name string) (Mapping, error)
	// ReadFile returns the whole contents of name.
	ReadFile(name string) ([]byte, error)
	// MkdirAll creates dir and any missing parents (mode 0755).
	MkdirAll(dir string) error
	// Mkdir creates dir (mode 0755), whose parent must exist.
	//
	// Errors: fs.ErrExist when dir exists, fs.ErrNotExist when its parent
	// does not (both wrapped in *fs.PathError).
	Mkdir(dir string) error
	// List returns the names in dir (files and directories), sorted.
	List(dir string) ([]string, error)
	// Remove removes a file or an empty directory; a missing name is not an error.
	Remove(name string) error
	// RemoveAll removes name and everything under it; a missing name is not an error.
	RemoveAll(name string) error
	// Rename renames oldname to newname, replacing newname atomically.
	Rename(oldname, newname string) error
	// SyncDir makes the names created, renamed and removed in dir durable.
	SyncDir(dir string) error
	// SyncFS makes everything written to the file system holding dir durable
	// (syncfs(2)): one call instead of an fdatasync per file.
	SyncFS(dir string) error
	// Device names the file system holding dir; dirs with equal Device share a SyncFS.
	Device(dir string) (uint64, error)
	// Lock takes an exclusive lock on the file name (creating it) for as
	// long as the returned Closer is open; the lock dies with the process
	// (kill -9 included), so a stale file never blocks a restart.
	//
	// Errors: ErrLocked (wrapped) when another holder has it.
	Lock(name string) (io.Closer, error)
}

// ErrLocked is returned by Lock when the lock is held elsewhere.
var ErrLocked = errors.New("vfs: locked by another process")

// File is an open file. Write appends when the file was opened with
// os.O_APPEND and writes at the current position otherwise; WriteAt writes
// at a byte position (not allowed on an os.O_APPEND file).
type File interface {
	io.ReaderAt
	io.WriterAt
	Write(p []byte) (int, error)
	// Sync makes every byte written so far, and the file's size, durable
	// (fdatasync(2)).
	Sync() error
	// Truncate sets the file's size in bytes.
	Truncate(size int64) error
	// Size is the file's current size in bytes.
	Size() (int64, error)
	// Allocate reserves the byte range [off, off+n) (fallocate(2), keeping
	// the size unchanged when the range is past the end). It is a hint:
	// callers ignore its error and write the bytes anyway.
	Allocate(off, n int64) error
	// Name is the path the file was opened with.
	Name() string
	Close() error
}

// Mapping is a file mapped into memory (MAP_SHARED): writes through the
// view are the file's contents. Index files use it; they are caches rebuilt
// from the logs, so nothing syncs them.
type Mapping interface {
	// Size is the current file size in bytes.
	Size() (int64, error)
	// Map resizes the file to size bytes and returns a writable view of all
	// of it. Views returned earlier become invalid.
	Map(size int64) ([]byte, error)
	// Close drops the view and the file handle.
	Close() error
}

// Exists reports whether name exists in fsys.
func Exists(fsys FS, name string) (bool, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// WriteFileAtomic replaces name with data so that after a crash name holds
// either its old contents or data, never a mix: data goes to name+".tmp",
// which is synced, renamed over name, and the directory synced. With noSync
// (tests and benchmarks only) the two syncs are skipped.
//
// Errors: any error of the steps, wrapped with the path; the temporary file
// is removed on failure.
func WriteFileAtomic(fsys FS, name string, data []byte, noSync bool) error {
	tmp, err := WriteTemp(fsys, name, data, noSync)
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err == nil && !noSync {
		err = fsys.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// WriteTemp is WriteFileAtomic's first half, for callers that rename many
// files after one directory sync: data goes to name+".tmp" (returned),
// fsynced unless noSync. On error the temporary file is removed.
func WriteTemp(fsys FS, name string, data []byte, noSync bool) (string, error) {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return tmp, fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return tmp, fmt.Errorf("write %s: %w", name, err)
	}
	return tmp, nil
}

// ReadAll reads f from byte 0 to its current size.
func ReadAll(f File) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && int64(n) == size {
		err = nil
	}
	return b[:n], err
}
