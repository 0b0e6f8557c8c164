package datadir

import "errors"

// Sentinel errors; wrapped with the directory or filter on the way up.
var (
	// ErrNotDataDir: the directory does not exist or holds none of comb's subdirectories.
	ErrNotDataDir = errors.New("not a comb data directory")
	// ErrNotFound: a filter named a queue or partition the directory does not hold.
	ErrNotFound = errors.New("not found")
	// ErrNotRecoverable wraps what stops a recovered read (View.EachRecovered):
	// offsets the server could not serve either (comb fsck says why).
	ErrNotRecoverable = errors.New("offsets missing from both the log's files and the commit log (run comb fsck)")
	// ErrCommitLogDamaged wraps WAL.Unread: some of the commit log's entries
	// could not be read, so the records only they hold are missing from a
	// recovered read (the server refuses to start on such a log).
	ErrCommitLogDamaged = errors.New("the commit log is damaged: records only its unread entries hold are missing (run comb fsck)")
)
