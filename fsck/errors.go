package fsck

import (
	"errors"

	"github.com/combmq/comb/datadir"
)

// Sentinel errors; wrapped with the directory or file on the way up.
var (
	// ErrLocked: a live server holds the data directory's LOCK file. Read-only checks
	// may run anyway with Options.Force; a repair never does.
	ErrLocked = errors.New("data directory is held by a live server (LOCK)")
	// ErrNotDataDir: the directory does not exist or holds none of comb's subdirectories
	// (datadir.Check).
	ErrNotDataDir = datadir.ErrNotDataDir
)
