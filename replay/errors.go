package replay

import "errors"

// Sentinel errors; wrapped with the partition, line or answer on the way up.
var (
	// ErrBadDump: a dump file line does not decode.
	ErrBadDump = errors.New("malformed dump line")
	// ErrTarget: the replay target answered something other than success.
	ErrTarget = errors.New("replay target refused the push")
	// ErrSourceDamaged: a partition's records could not all be read from the data directory
	// (a damaged segment file); what was readable before the damage was pushed.
	ErrSourceDamaged = errors.New("source partition damaged")
)
