package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/layout"
)

// lockFile is the data directory's LOCK file, flock'd by a live server (broker/open_lock.go).
const lockFile = layout.Lock

// dirLock is fsck's own hold on a data directory; nil when fsck runs without one
// (read-only on a directory without a LOCK file, or --force).
type dirLock struct{ f *os.File }

// probeLock takes a non-blocking exclusive flock on <dir>/LOCK. For a read-only run
// a missing LOCK file is fine and is not created (fsck writes nothing); a repair run
// creates it and holds the lock for the whole repair, so a server cannot start
// underneath it. A LOCK held by a live process returns ErrLocked.
func probeLock(dir string, create bool) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	flags := os.O_RDONLY
	if create {
		flags = os.O_RDWR | os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrNotExist) && !create {
		return &dirLock{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
