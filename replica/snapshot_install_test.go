package replica

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
)

// installNode is a node of TestAFarBehindNodeInstallsTheLeadersDirectory:
// its data directory (what SnapshotFiles lists) with raft's under it.
type installNode struct {
	peer Peer
	data string
	log  *Log
	rec  *recorder
}

func (n *installNode) start(t *testing.T, peers []Peer) {
	t.Helper()
	l, err := Open(Config{NodeID: n.peer.ID, RaftAddr: n.peer.Addr, Dir: filepath.Join(n.data, "raft"), Cluster: peers,
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, TrailingLogs: 4, SnapshotThreshold: 1 << 20,
		WALSegmentBytes: 8 << 10, Logger: hclog.NewNullLogger()})
	require.NoError(t, err)
	n.log, n.rec = l, &recorder{dir: n.data}
	require.NoError(t, l.Start(n.rec))
}

// A node that missed entries the leader's log no longer holds gets the
// leader's snapshot with its data directory: raft stores it, the node goes
// stale and applies nothing more (ErrRestartToInstall); the next start's
// PrepareDataDir swaps its data directory for the leader's (its own files
// gone, raft's kept), a second run does nothing, and the restarted node
// applies the entries after the snapshot.
func TestAFarBehindNodeInstallsTheLeadersDirectory(t *testing.T) {
	peers := make([]Peer, 3)
	nodes := make([]*installNode, 3)
	for i := range peers {
		peers[i] = Peer{ID: fmt.Sprintf("n%d", i+1), Addr: freeTCPAddr(t)}
		nodes[i] = &installNode{peer: peers[i], data: t.TempDir()}
	}
	for _, n := range nodes {
		n.start(t, peers)
		t.Cleanup(func() { n.log.Close() })
	}
	var leader *installNode
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if n.log.Leading() {
				leader = n
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	var behind *installNode
	for _, n := range nodes {
		if n != leader {
			behind = n
		}
	}
	require.NoError(t, behind.log.Close())
	require.NoError(t, os.WriteFile(filepath.Join(behind.data, "stale-file"), []byte("old"), 0o600))

	require.NoError(t, os.MkdirAll(filepath.Join(leader.data, "partitions", "p1"), 0o700))
	seg := bytes.Repeat([]byte("segment "), 1000)
	require.NoError(t, os.WriteFile(filepath.Join(leader.data, "partitions", "p1", "00000001.seg"), seg, 0o600))
	big := bytes.Repeat([]byte{'x'}, 1024)
	for i := range 60 { // several raft-wal segments of 8 KiB
		tk, err := leader.log.Append(1, append([]byte{byte(i)}, big...))
		require.NoError(t, err)
		require.NoError(t, tk.Wait())
	}
	require.NoError(t, leader.log.Snapshot())
	first, err := leader.log.store.FirstIndex()
	require.NoError(t, err)
	require.Greater(t, first, uint64(10), "the leader's log dropped the entries the node missed")

	behind.start(t, peers)
	select {
	case <-behind.log.Stale():
	case <-time.After(10 * time.Second):
		t.Fatal("the node behind never received the leader's snapshot")
	}
	require.ErrorIs(t, behind.log.Err(), ErrRestartToInstall)
	require.NoError(t, behind.log.Close())

	id, err := PrepareDataDir(behind.data, filepath.Join(behind.data, "raft"), nil)
	require.NoError(t, err)
	require.NotEmpty(t, id)
	got, err := os.ReadFile(filepath.Join(behind.data, "partitions", "p1", "00000001.seg"))
	require.NoError(t, err)
	require.Equal(t, seg, got, "the leader's file, byte for byte")
	_, err = os.Stat(filepath.Join(behind.data, "stale-file"))
	require.True(t, os.IsNotExist(err), "the node's own state is gone")
	_, err = os.Stat(filepath.Join(behind.data, installStaging))
	require.True(t, os.IsNotExist(err), "no staging left")
	again, err := PrepareDataDir(behind.data, filepath.Join(behind.data, "raft"), nil)
	require.NoError(t, err)
	require.Empty(t, again, "installed once")

	behind.start(t, peers)
	tk, err := leader.log.Append(2, []byte("after"))
	require.NoError(t, err)
	require.NoError(t, tk.Wait())
	require.Eventually(t, func() bool {
		got := behind.rec.entries()
		return len(got) > 0 && string(got[len(got)-1].payload) == "after"
	}, 10*time.Second, 5*time.Millisecond, "the installed node follows on")
	require.NoError(t, behind.log.Err())
}

func freeTCPAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
