package broker

import "errors"

// ErrLocked is returned by Open when another live process holds the data
// directory's LOCK file (vfs.FS.Lock: an flock that dies with its process,
// so a stale LOCK file never blocks a restart).
var ErrLocked = errors.New("data directory is in use by another process")
