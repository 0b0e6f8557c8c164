package replica

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func testFSM(node string) (*fsm, *recorder) {
	rec := &recorder{}
	l := &Log{cfg: Config{NodeID: node}, logger: hclog.NewNullLogger(), stale: make(chan struct{})}
	return &fsm{l: l, a: rec}, rec
}

// A snapshot flushes the broker before its marker is written (raft drops
// the log behind it only after Persist), and a start restores the node's
// own marker.
func TestSnapshotFlushesFirstAndRestoresItsOwnMarker(t *testing.T) {
	f, rec := testFSM("n1")
	f.l.applied.Store(41)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	require.True(t, sink.closed)
	require.Equal(t, 1, rec.flushes)

	g, _ := testFSM("n1")
	require.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, uint64(41), g.l.applied.Load())
	require.NoError(t, g.l.Err())
}

// A failed flush cancels the snapshot: raft keeps its log.
func TestSnapshotCancelledWhenTheFlushFails(t *testing.T) {
	boom := errors.New("disk full")
	snap := marker{lsn: 3, node: "n1", flush: func() error { return boom }}
	sink := &memSink{}
	require.ErrorIs(t, snap.Persist(sink), boom)
	require.True(t, sink.cancelled)
	require.False(t, sink.closed)
}

// Another node's snapshot (an InstallSnapshot from the leader) carries no
// state: restoring it is refused and the node stops following, rather than
// skipping entries it never applied.
func TestRestoreRefusesAnotherNodesSnapshot(t *testing.T) {
	src, _ := testFSM("n2")
	src.l.applied.Store(99)
	snap, err := src.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))

	f, _ := testFSM("n1")
	err = f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes())))
	require.ErrorIs(t, err, ErrSnapshotInstall)
	require.ErrorIs(t, f.l.Err(), ErrSnapshotInstall)
	require.Zero(t, f.l.applied.Load())

	require.ErrorIs(t, f.Restore(io.NopCloser(bytes.NewReader([]byte{9, 9}))), ErrBadSnapshot)
}

// Another node's snapshot with its data directory's archive is accepted and
// left for the next start to install: the node stops applying and is stale.
func TestRestoreOfAnArchiveAsksForARestart(t *testing.T) {
	m := marker{lsn: 99, node: "n2", addrs: map[string]string{"n2": "127.0.0.1:6002"}, archive: true}
	f, _ := testFSM("n1")
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(m.encode()))))
	require.ErrorIs(t, f.l.Err(), ErrRestartToInstall)
	select {
	case <-f.l.Stale():
	default:
		t.Fatal("not stale")
	}
	require.Equal(t, "127.0.0.1:6002", f.l.addrs.copy()["n2"])

	// One whose entries this node applied already (the same snapshot sent
	// again after a start installed it) changes nothing.
	g, _ := testFSM("n1")
	g.l.applied.Store(99)
	require.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(m.encode()))))
	require.NoError(t, g.l.Err())
	select {
	case <-g.l.Stale():
		t.Fatal("stale for a snapshot it covers")
	default:
	}
}
