package replica

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// fsm is raft's view of the broker: every committed command comes through
// Apply, in index order, on one goroutine.
type fsm struct {
	l *Log
	a Applier
}

// Apply hands a committed entry to the broker unless this Log proposed it
// (its handler applied it before proposing). Entries below what the node's
// state covers come again after a start; the broker's replay skips what it
// has. A failure marks the log diverged (Err): applying later entries on a
// state missing this one would be wrong.
func (f *fsm) Apply(rl *raft.Log) any {
	if rl.Type != raft.LogCommand {
		return nil
	}
	e, err := decodeEntry(rl.Data)
	if err != nil {
		f.fail(fmt.Errorf("raft index %d: %w", rl.Index, err))
		return err
	}
	if f.l.Err() != nil {
		return f.l.Err()
	}
	if e.origin != f.l.origin {
		if err := f.a.ApplyReplicated(e.lsn, e.kind, e.payload); err != nil {
			err = fmt.Errorf("entry %d (raft index %d, kind %d): %w: %w", e.lsn, rl.Index, e.kind, ErrDiverged, err)
			f.fail(err)
			return err
		}
	}
	if e.lsn > f.l.applied.Load() {
		f.l.applied.Store(e.lsn)
	}
	return nil
}

func (f *fsm) fail(err error) {
	f.l.logger.Error("replica: this node stops following the log", "error", err)
	f.l.err.CompareAndSwap(nil, &err)
}

// Snapshot records only the applied LSN: the state itself is the broker's
// data directory. Streaming it to a node that lacks it (segment files and
// cursor state) is not built yet, and neither is making the directory
// durable up to this LSN before raft compacts its log behind it
// (docs/replication.md, "What is left").
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return marker{lsn: f.l.applied.Load()}, nil
}

// Restore accepts this node's own marker (raft restores its newest snapshot
// at every start); a snapshot can carry no state yet, so it only moves the
// applied LSN.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return fmt.Errorf("replica: snapshot marker: %w", err)
	}
	if lsn := binary.BigEndian.Uint64(b[:]); lsn > f.l.applied.Load() {
		f.l.applied.Store(lsn)
	}
	return nil
}

type marker struct{ lsn uint64 }

func (m marker) Persist(sink raft.SnapshotSink) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], m.lsn)
	if _, err := sink.Write(b[:]); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (marker) Release() {}
