package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Open when another live process holds the data
// directory's LOCK file.
var ErrLocked = errors.New("data directory is in use by another process")

// lockDir takes an exclusive flock on <dir>/LOCK. The lock dies with the
// process (kill -9 included), so a stale LOCK file never blocks a restart.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (is another comb serving it?)", dir, ErrLocked)
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	// The pid is informational only (for an operator reading the file).
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.Close()
}
