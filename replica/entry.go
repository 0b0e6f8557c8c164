package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadEntry: a raft log entry's command does not hold a comb entry (a bug,
// or a newer format written by another node).
var ErrBadEntry = errors.New("replica: not a comb commit-log entry")

// entryVersion is the first byte of every command this package writes.
const entryVersion = 1

// headerLen is the fixed part of a command: version u8 | lsn u64 | origin
// u64 | kind u8 (the payload follows, to the end of the command).
const headerLen = 1 + 8 + 8 + 1

// entry is one comb commit-log entry as it travels in a raft log command.
//
// lsn is comb's own sequence number, not raft's index: the broker needs an
// entry's LSN when it appends it (its flush pass and stream store key state
// by it), and raft assigns an index only once its leader loop dispatches the
// entry, while its own entries (no-ops, configuration changes, barriers)
// take indexes too. origin says which Log value proposed it, so the node
// that proposed it (and applied it already in its handler) skips it.
type entry struct {
	lsn     uint64
	origin  uint64
	kind    byte
	payload []byte
}

// encodeEntry returns the command bytes of e (a new slice: raft keeps it).
func encodeEntry(e entry) []byte {
	b := make([]byte, headerLen+len(e.payload))
	b[0] = entryVersion
	binary.BigEndian.PutUint64(b[1:], e.lsn)
	binary.BigEndian.PutUint64(b[9:], e.origin)
	b[17] = e.kind
	copy(b[headerLen:], e.payload)
	return b
}

// decodeEntry reads a command; the payload aliases data.
//
// Errors: ErrBadEntry for a short command, an unknown version or LSN 0.
func decodeEntry(data []byte) (entry, error) {
	if len(data) < headerLen {
		return entry{}, fmt.Errorf("%w: %d bytes, the header alone is %d", ErrBadEntry, len(data), headerLen)
	}
	if data[0] != entryVersion {
		return entry{}, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadEntry, data[0], entryVersion)
	}
	e := entry{
		lsn:     binary.BigEndian.Uint64(data[1:]),
		origin:  binary.BigEndian.Uint64(data[9:]),
		kind:    data[17],
		payload: data[headerLen:],
	}
	if e.lsn == 0 {
		return entry{}, fmt.Errorf("%w: LSN 0", ErrBadEntry)
	}
	return e, nil
}
