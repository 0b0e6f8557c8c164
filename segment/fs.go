package segment

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/index"
)

// fileSystem is the seam between the log and the disk: just what an
// append-only log needs. osFS is the real one; memFS (memfs.go) is the
// crash-simulating twin the tests use. A later issue puts an LRU of open
// handles behind this seam.
type fileSystem interface {
	MkdirAll(dir string) error
	// List returns the names in dir, sorted.
	List(dir string) ([]string, error)
	// OpenFile opens name for reading and appending, creating it when create is set.
	OpenFile(name string, create bool) (file, error)
	// OpenIndex opens (creating) a mapped index file.
	OpenIndex(name string) (index.Backing, error)
	Remove(name string) error
	// SyncDir makes the creation and removal of names in dir durable.
	SyncDir(dir string) error
	// SyncFS makes everything written to the file system holding dir durable
	// (syncfs(2)): one call instead of an fdatasync per file.
	SyncFS(dir string) error
	// Device names the file system holding dir; logs with equal Device share a SyncFS.
	Device(dir string) (uint64, error)
}

// file is an open segment or dedup file. Writes always append.
type file interface {
	io.ReaderAt
	Write(p []byte) (int, error)
	// Sync makes every byte written so far durable (fdatasync).
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) OpenFile(name string, create bool) (file, error) {
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenIndex(name string) (index.Backing, error) { return index.OpenOSBacking(name) }

func (osFS) Remove(name string) error {
	err := os.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (osFS) SyncDir(dir string) error {
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

func (osFS) SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = unix.Syncfs(int(d.Fd()))
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) Device(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Dev), nil
}

type osFile struct{ *os.File }

// Sync uses fdatasync: the file's size is part of what it flushes, its
// timestamps are not, and nothing else is needed to read the data back.
func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// join is filepath.Join for the hot path's few call sites.
func join(dir, name string) string { return filepath.Join(dir, name) }
