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
	} else {
		f.a.CommittedOwn(e.lsn, e.kind, e.payload)
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

// Snapshot records the applied LSN and this node's id: the state itself is
// the node's data directory, which Persist makes durable up to at least
// that LSN before raft may compact its log behind the snapshot. Streaming
// the directory to a node that lacks it is not built yet
// (docs/replication.md, "Snapshots").
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return marker{lsn: f.l.applied.Load(), node: f.l.cfg.NodeID, flush: f.a.Flush}, nil
}

// Restore accepts this node's own marker (raft restores its newest snapshot
// at every start: Persist made the directory cover it) and refuses another
// node's (an InstallSnapshot from the leader: a marker carries no state, so
// accepting it would skip entries this node never applied). A refusal
// marks the log diverged; the node needs a fresh copy of a data directory.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	m, err := readMarker(rc)
	if err != nil {
		return err
	}
	if m.node != f.l.cfg.NodeID {
		err := fmt.Errorf("%w: a snapshot of node %s up to LSN %d (installing another node's state is not built yet)", ErrSnapshotInstall, m.node, m.lsn)
		f.fail(err)
		return err
	}
	if m.lsn > f.l.applied.Load() {
		f.l.applied.Store(m.lsn)
	}
	return nil
}

// marker is a snapshot's content:
//
//	version u8 (1) | LSN u64 BE | node id length u8 | node id
type marker struct {
	lsn   uint64
	node  string
	flush func() error // the broker's flush pass, run before the marker is written
}

const markerVersion = 1

// Persist runs the broker's flush pass first (concurrently with Apply, as
// raft allows: a leader's pass commits a checkpoint through raft), so the
// data directory covers every entry up to the snapshot's index before raft
// deletes them from its log.
func (m marker) Persist(sink raft.SnapshotSink) error {
	if m.flush != nil {
		if err := m.flush(); err != nil {
			sink.Cancel()
			return fmt.Errorf("replica: snapshot at LSN %d: flush: %w", m.lsn, err)
		}
	}
	b := make([]byte, 0, 10+len(m.node))
	b = append(b, markerVersion)
	b = binary.BigEndian.AppendUint64(b, m.lsn)
	b = append(b, byte(len(m.node)))
	b = append(b, m.node...)
	if _, err := sink.Write(b); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (marker) Release() {}

// readMarker reads what Persist wrote.
//
// Errors: ErrBadSnapshot for anything else.
func readMarker(r io.Reader) (marker, error) {
	var h [10]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return marker{}, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if h[0] != markerVersion {
		return marker{}, fmt.Errorf("%w: version %d", ErrBadSnapshot, h[0])
	}
	node := make([]byte, h[9])
	if _, err := io.ReadFull(r, node); err != nil {
		return marker{}, fmt.Errorf("%w: node id: %v", ErrBadSnapshot, err)
	}
	return marker{lsn: binary.BigEndian.Uint64(h[1:9]), node: string(node)}, nil
}
