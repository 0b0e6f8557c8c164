package replica

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/combmq/comb/lsn"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

func TestAnnounceRoundTrip(t *testing.T) {
	for _, a := range []announcement{
		{node: "n1", httpAddr: "127.0.0.1:6632"},
		{node: string(bytes.Repeat([]byte{'x'}, 255)), httpAddr: "[::1]:6632"},
	} {
		got, err := decodeAnnounce(encodeAnnounce(a))
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
}

func TestDecodeAnnounceRefuses(t *testing.T) {
	good := encodeAnnounce(announcement{node: "n1", httpAddr: "h:1"})
	for name, data := range map[string][]byte{
		"empty":           nil,
		"version alone":   {announceVersion},
		"a comb entry":    encodeEntry(entry{lsn: 1, kind: 1}),
		"empty node id":   {announceVersion, 0, 'h', ':', '1'},
		"truncated id":    good[:3],
		"no address":      good[:2+2],
		"unknown version": append([]byte{3}, good[1:]...),
	} {
		if _, err := decodeAnnounce(data); !errors.Is(err, ErrBadAnnounce) {
			t.Errorf("%s: got %v, want ErrBadAnnounce", name, err)
		}
	}
}

// A build that knows only comb entries (version 1) refuses an announcement
// as an unknown version instead of reading it as an entry.
func TestEntryDecoderRefusesAnAnnouncement(t *testing.T) {
	_, err := decodeEntry(encodeAnnounce(announcement{node: "n1", httpAddr: "127.0.0.1:6632"}))
	require.ErrorIs(t, err, ErrBadEntry)
}

// Every node records an announcement, the proposer included; the broker is
// not handed it and the applied LSN does not move (it takes none).
func TestFSMAppliesAnAnnouncementWithoutTheBroker(t *testing.T) {
	f, rec := testFSM("n1")
	f.l.applied.Store(7)
	f.l.origin = 42
	for _, node := range []string{"n2", "n1"} {
		res := f.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: encodeAnnounce(announcement{node: node, httpAddr: node + ".example:6632"})})
		require.Nil(t, res)
	}
	require.Empty(t, rec.entries())
	require.Equal(t, uint64(7), f.l.applied.Load())
	require.Equal(t, "n2.example:6632", f.l.addrs.get("n2"))
	require.Equal(t, "n1.example:6632", f.l.addrs.get("n1"))
	require.NoError(t, f.l.Err())

	// A newer announcement of the same node wins (a restart on another --addr).
	f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: encodeAnnounce(announcement{node: "n2", httpAddr: "n2.example:7000"})})
	require.Equal(t, "n2.example:7000", f.l.addrs.get("n2"))

	// A malformed one stops the node following, as a malformed entry does.
	res := f.Apply(&raft.Log{Index: 5, Type: raft.LogCommand, Data: []byte{announceVersion, 9}})
	require.ErrorIs(t, res.(error), ErrBadAnnounce)
	require.ErrorIs(t, f.l.Err(), ErrBadAnnounce)
}

// The snapshot marker carries the addresses (raft compacts the announcements
// away), and a start restores them; a version 1 marker still restores, with
// no addresses.
func TestSnapshotMarkerCarriesTheHTTPAddresses(t *testing.T) {
	f, _ := testFSM("n1")
	f.l.applied.Store(41)
	f.l.addrs.set("n1", "10.0.0.1:6632")
	f.l.addrs.set("n3", "10.0.0.3:6632")
	snap, err := f.Snapshot()
	require.NoError(t, err)
	f.l.addrs.set("n2", "later:1") // after the snapshot: not in it
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))

	g, _ := testFSM("n1")
	g.l.addrs.set("stale", "x:1")
	require.NoError(t, g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, map[string]string{"n1": "10.0.0.1:6632", "n3": "10.0.0.3:6632"}, g.l.addrs.copy())
	require.Equal(t, uint64(41), g.l.applied.Load())

	v1 := []byte{markerVersion1, 0, 0, 0, 0, 0, 0, 0, 9, 2, 'n', '1'}
	h, _ := testFSM("n1")
	h.l.addrs.set("n2", "kept:1")
	require.NoError(t, h.Restore(io.NopCloser(bytes.NewReader(v1))))
	require.Equal(t, uint64(9), h.l.applied.Load())
	require.Equal(t, map[string]string{"n2": "kept:1"}, h.l.addrs.copy())

	for n := 10; n < len(sink.Bytes()); n++ {
		_, err := readMarker(bytes.NewReader(sink.Bytes()[:n]))
		require.ErrorIs(t, err, ErrBadSnapshot, "marker cut at %d of %d bytes", n, len(sink.Bytes()))
	}
}

func TestAdvertisedHTTPAddr(t *testing.T) {
	cases := []struct{ name, listen, raft, want string }{
		{"a concrete host is advertised as given", "127.0.0.1:6632", "10.0.0.1:7001", "127.0.0.1:6632"},
		{"a name is advertised as given", "comb-1.internal:6632", "10.0.0.1:7001", "comb-1.internal:6632"},
		{"an empty host takes the raft host", ":6632", "10.0.0.1:7001", "10.0.0.1:6632"},
		{"0.0.0.0 takes the raft host", "0.0.0.0:8080", "10.0.0.1:7001", "10.0.0.1:8080"},
		{":: takes the raft host", "[::]:8080", "[fd00::1]:7001", "[fd00::1]:8080"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := AdvertisedHTTPAddr(c.listen, c.raft)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	for _, bad := range [][2]string{{"6632", "h:1"}, {"127.0.0.1:0", "h:1"}, {":6632", "h"}} {
		_, err := AdvertisedHTTPAddr(bad[0], bad[1])
		require.Error(t, err, "%v", bad)
	}
}

// httpAddrOf is the HTTP address node id announces in these tests.
func httpAddrOf(id string) string { return id + ".test:6632" }

// Every node learns the HTTP address of each new leader (forwarding's
// target); the announcement takes no LSN and no node takes it for an entry.
func TestEveryNodeLearnsTheLeadersHTTPAddress(t *testing.T) {
	nodes := startNodes(t, 3)
	leader := leaderOf(t, nodes, nil)
	requireLeaderHTTP(t, nodes, leader)
	leader, tk := appendOnLeader(t, nodes, nil, []byte("x"))
	require.Equal(t, lsn.LSN(1), tk.LSN, "the announcement took no LSN")
	require.NoError(t, tk.Wait())

	require.NoError(t, leader.log.Close())
	next := leaderOf(t, nodes, leader)
	var live []*testNode
	for _, n := range nodes {
		if n != leader {
			live = append(live, n)
		}
	}
	requireLeaderHTTP(t, live, next)
	_, tk = appendOnLeader(t, live, nil, []byte("y"))
	require.Equal(t, lsn.LSN(2), tk.LSN)
	require.NoError(t, tk.Wait())
}

// appendOnLeader appends payload on the leader among nodes (never except), finding the
// leader again when one refuses with ErrNotLeader: with the tests' 200 ms timeouts a loaded
// box (CI, the race detector) can move leadership between leaderOf and the Append. A refusal
// took no LSN, so the entry's LSN is what it would have been. It returns the node that took it.
func appendOnLeader(t *testing.T, nodes []*testNode, except *testNode, payload []byte) (*testNode, lsn.Ticket) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := leaderOf(t, nodes, except)
		tk, err := n.log.Append(1, payload)
		if errors.Is(err, ErrNotLeader) && time.Now().Before(deadline) {
			continue // leaderOf polls until a node leads again
		}
		require.NoError(t, err)
		return n, tk
	}
}

// requireLeaderHTTP waits until every node names leader and the HTTP address
// it announced, and checks that none took the announcement for an entry (it
// would have stopped following).
func requireLeaderHTTP(t *testing.T, nodes []*testNode, leader *testNode) {
	t.Helper()
	want := leader.log.NodeID()
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			id, addr := n.log.LeaderHTTP()
			return id == want && addr == httpAddrOf(want)
		}, 5*time.Second, 5*time.Millisecond, "%s learns the HTTP address of %s", n.log.NodeID(), want)
		require.NoError(t, n.log.Err())
	}
}

// FuzzReadMarker: a snapshot marker of any bytes is read or refused with
// ErrBadSnapshot, never a panic; a version 2 marker that reads re-encodes to
// one that reads back the same.
func FuzzReadMarker(f *testing.F) {
	f.Add(marker{lsn: 41, node: "n1", addrs: map[string]string{"n1": "10.0.0.1:6632", "n2": "[::1]:6632"}}.encode())
	f.Add([]byte{markerVersion1, 0, 0, 0, 0, 0, 0, 0, 9, 2, 'n', '1'})
	f.Add([]byte{markerVersion, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readMarker(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, ErrBadSnapshot)
			return
		}
		if data[0] != markerVersion {
			return
		}
		again, err := readMarker(bytes.NewReader(m.encode()))
		require.NoError(t, err)
		require.Equal(t, m.lsn, again.lsn)
		require.Equal(t, m.node, again.node)
		require.Equal(t, m.addrs, again.addrs)
	})
}
