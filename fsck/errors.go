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
	// ErrNotFound: dump or replay named a queue or partition the directory does not hold.
	ErrNotFound = datadir.ErrNotFound
	// ErrBadDump: a dump file line does not decode.
	ErrBadDump = errors.New("malformed dump line")
	// ErrTarget: the replay target answered something other than success.
	ErrTarget = errors.New("replay target refused the push")
)
