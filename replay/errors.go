package replay

import "errors"

// Sentinel errors; wrapped with the partition, line or answer on the way up.
var (
	// ErrBadDump: a dump file line does not decode.
	ErrBadDump = errors.New("malformed dump line")
	// ErrTarget: the replay target answered something other than success.
	ErrTarget = errors.New("replay target refused the push")
)
