package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int) (File, error) {
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenMapped(name string) (Mapping, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &osMapping{f: f}, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) Mkdir(dir string) error { return os.Mkdir(dir, 0o755) }

// List reads names without stat'ing them (os.ReadDir allocates an entry per
// name; at 100,000 partition directories that was a quarter of a start-up).
func (osFS) List(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) Remove(name string) error {
	err := os.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (osFS) RemoveAll(name string) error { return os.RemoveAll(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, os.ErrInvalid) || errors.Is(err, unix.EINVAL) {
		err = nil // a file system that cannot sync directories (some tmpfs setups)
	}
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

// Sync is fdatasync: it flushes the data and the size, not the timestamps,
// which is all that reading the data back needs.
func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: "fdatasync", Path: f.File.Name(), Err: err}
			}
			return nil
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

func (f osFile) Allocate(off, n int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
}

type osMapping struct {
	f *os.File
	m []byte
}

func (o *osMapping) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (o *osMapping) Map(size int64) ([]byte, error) {
	if o.m != nil {
		if err := unix.Munmap(o.m); err != nil {
			return nil, err
		}
		o.m = nil
	}
	if err := o.f.Truncate(size); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, nil
	}
	m, err := unix.Mmap(int(o.f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", o.f.Name(), err)
	}
	o.m = m
	return m, nil
}

func (o *osMapping) Close() error {
	var err error
	if o.m != nil {
		err = unix.Munmap(o.m)
		o.m = nil
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock is flock(2) on name, whose contents become the holder's pid (for an
// operator reading the file).
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", name, ErrLocked)
		}
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return flockFile{f}, nil
}

type flockFile struct{ *os.File }

func (f flockFile) Close() error {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.File.Close()
}
