package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

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
//
// A leader's announcement (announce.go) and the cluster id (clusterid.go)
// are this package's own: every node, the proposer included, records them,
// and the broker never sees them (they take no LSN, so the broker's entries
// stay gapless).
func (f *fsm) Apply(rl *raft.Log) any {
	if rl.Type != raft.LogCommand {
		return nil
	}
	if len(rl.Data) > 0 && rl.Data[0] == announceVersion {
		a, err := decodeAnnounce(rl.Data)
		if err != nil {
			f.fail(fmt.Errorf("raft index %d: %w", rl.Index, err))
			return err
		}
		f.l.addrs.set(a.node, a.httpAddr)
		f.l.leaderNews.fire()
		return nil
	}
	if len(rl.Data) > 0 && rl.Data[0] == clusterIDVersion {
		c, err := decodeClusterID(rl.Data)
		if err != nil {
			f.fail(fmt.Errorf("raft index %d: %w", rl.Index, err))
			return err
		}
		// The first id the cluster committed is every member's; the directory keeps the
		// one it has (a second proposal cannot commit after a barrier applied the first,
		// so another id here is a bug, not a state to follow).
		switch adopted, err := f.l.ident.adopt(c); {
		case errors.Is(err, ErrForeignCluster):
			f.l.logger.Error("the log names another cluster id than this node's directory; keeping the directory's", "log", c.id, "error", err)
		case err != nil:
			// Not kept: the next connection to a member that has it offers it again.
			f.l.logger.Error("cannot keep the cluster id", "cluster_id", c.id, "error", err)
		case adopted:
			f.l.logger.Info("this node's cluster id, from the log", "cluster_id", c.id)
		}
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
		if f.l.ready.Load() {
			// Another leader's entry commits while this node still counts
			// itself the ready leader (every earlier term's entry was applied
			// before it became ready): it was deposed, and raft's notice may
			// not have reached watchLeadership yet. Stale at once, so the
			// broker applies nothing over what it did in memory.
			f.l.markStale()
		}
		if err := f.a.ApplyReplicated(e.lsn, e.kind, e.payload); err != nil {
			var c interface{ Closing() bool }
			if errors.As(err, &c) && c.Closing() {
				// The broker is closing and raft is about to: not applied,
				// not a divergence (a start applies it again).
				return err
			}
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

// Snapshot records the applied LSN, this node's id and every node's
// announced HTTP address (raft drops the announcements behind the snapshot
// with the rest of its log): the state itself is the node's data directory,
// which Persist makes durable up to at least that LSN before raft may compact
// its log behind the snapshot. A node that lacks the state receives the
// directory itself when raft sends it the snapshot (snapshot_install.go).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return marker{lsn: f.l.applied.Load(), node: f.l.cfg.NodeID, addrs: f.l.addrs.copy(), flush: f.a.Flush}, nil
}

// Restore is called with a snapshot raft received from the leader (a start
// restores none: Config.NoSnapshotRestoreOnStart). One that carries another
// node's data directory (markerArchive) is installed by the next start
// (PrepareDataDir) from raft's store, where raft keeps it: this node stops
// applying (ErrRestartToInstall: the entries after the snapshot need the
// state it holds) and reports itself stale, so comb serve restarts it;
// unless it applied every entry the snapshot covers already. A
// marker alone (from a node before snapshot install existed) cannot be
// installed: the node stops with ErrSnapshotInstall.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	m, err := readMarker(rc)
	if err != nil {
		return err
	}
	if !m.archive {
		if m.node == f.l.cfg.NodeID {
			// This node's own state (its data directory covers it).
			if m.lsn > f.l.applied.Load() {
				f.l.applied.Store(m.lsn)
			}
			f.l.addrs.replace(m.addrs)
			f.l.leaderNews.fire()
			return nil
		}
		err := fmt.Errorf("%w: a snapshot of node %s up to LSN %d carries no data directory", ErrSnapshotInstall, m.node, m.lsn)
		f.fail(err)
		return err
	}
	f.l.addrs.replace(m.addrs)
	f.l.leaderNews.fire()
	if m.lsn <= f.l.applied.Load() {
		// This node applied every entry the snapshot covers (entries apply
		// in LSN order): its own directory holds that state already, as
		// when the same snapshot comes again after a start installed it.
		return nil
	}
	f.l.logger.Warn("replica: received another node's snapshot; restart to install it", "from", m.node, "lsn", m.lsn)
	f.l.err.CompareAndSwap(nil, &errRestartToInstall)
	f.l.markStale()
	return nil
}

// marker is how a snapshot begins (version 3; version 1, written before
// leaders announced their HTTP address, ends after the node id, version 2
// before the flags; both are still read):
//
//	version u8 (3) | LSN u64 BE | node id length u8 | node id |
//	address count u16 BE | count × (node id length u8 | node id | address length u16 BE | host:port) |
//	flags u8 (bit 0: the data directory's archive follows, archive.go)
//
// A snapshot this node takes is its marker alone (its data directory is the
// state); one sent to another node is the marker with the archive flag and
// the archive (snapshot_install.go).
type marker struct {
	lsn   uint64
	node  string
	addrs map[string]string // node id → announced HTTP address; nil from a version 1 marker
	// archive: the data directory's archive follows the marker (version 3).
	archive bool
	flush   func() error // the broker's flush pass, run before the marker is written
}

const (
	markerVersion1 = 1
	markerVersion2 = 2
	markerVersion  = 3
)

// markerArchive, in a version 3 marker's flags: the data directory's
// archive follows (archive.go): a snapshot sent to, or received from,
// another node (snapshot_install.go).
const markerArchive = 1

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
	if _, err := sink.Write(m.encode()); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (marker) Release() {}

// encode returns the marker's bytes. Node ids longer than 255 bytes and
// addresses longer than 65,535 cannot be announced (ParseCluster and the
// OS bound them far below); they are cut rather than corrupt the layout.
func (m marker) encode() []byte {
	b := make([]byte, 0, 12+len(m.node)+32*len(m.addrs))
	b = append(b, markerVersion)
	b = binary.BigEndian.AppendUint64(b, m.lsn)
	b = appendShort8(b, m.node)
	ids := make([]string, 0, len(m.addrs))
	for id := range m.addrs {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the same map gives the same bytes
	ids = ids[:min(len(ids), math.MaxUint16)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(ids)))
	for _, id := range ids {
		b = appendShort8(b, id)
		a := m.addrs[id]
		a = a[:min(len(a), math.MaxUint16)]
		b = binary.BigEndian.AppendUint16(b, uint16(len(a)))
		b = append(b, a...)
	}
	var flags byte
	if m.archive {
		flags |= markerArchive
	}
	return append(b, flags)
}

func appendShort8(b []byte, s string) []byte {
	s = s[:min(len(s), math.MaxUint8)]
	b = append(b, byte(len(s)))
	return append(b, s...)
}

// readMarker reads a marker, version 1, 2 or 3.
//
// Errors: ErrBadSnapshot for anything else.
func readMarker(r io.Reader) (marker, error) {
	var h [10]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return marker{}, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if h[0] != markerVersion && h[0] != markerVersion2 && h[0] != markerVersion1 {
		return marker{}, fmt.Errorf("%w: version %d", ErrBadSnapshot, h[0])
	}
	node := make([]byte, h[9])
	if _, err := io.ReadFull(r, node); err != nil {
		return marker{}, fmt.Errorf("%w: node id: %v", ErrBadSnapshot, err)
	}
	m := marker{lsn: binary.BigEndian.Uint64(h[1:9]), node: string(node)}
	if h[0] == markerVersion1 {
		return m, nil
	}
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return marker{}, fmt.Errorf("%w: address count: %v", ErrBadSnapshot, err)
	}
	count := int(binary.BigEndian.Uint16(n[:]))
	m.addrs = make(map[string]string, count)
	for i := range count {
		id, err := readShort(r, 1)
		if err != nil {
			return marker{}, fmt.Errorf("%w: address %d of %d: node id: %v", ErrBadSnapshot, i, count, err)
		}
		addr, err := readShort(r, 2)
		if err != nil {
			return marker{}, fmt.Errorf("%w: address %d of %d: %v", ErrBadSnapshot, i, count, err)
		}
		m.addrs[id] = addr
	}
	if h[0] == markerVersion2 {
		return m, nil
	}
	var f [1]byte
	if _, err := io.ReadFull(r, f[:]); err != nil {
		return marker{}, fmt.Errorf("%w: flags: %v", ErrBadSnapshot, err)
	}
	if f[0]&^markerArchive != 0 {
		return marker{}, fmt.Errorf("%w: unknown flags %#x", ErrBadSnapshot, f[0])
	}
	m.archive = f[0]&markerArchive != 0
	return m, nil
}

// readShort reads a string after its length of width bytes (1 or 2, big-endian).
func readShort(r io.Reader, width int) (string, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:width]); err != nil {
		return "", err
	}
	n := int(l[0])
	if width == 2 {
		n = int(binary.BigEndian.Uint16(l[:]))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}
