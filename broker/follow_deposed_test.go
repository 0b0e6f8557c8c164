package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeposedLeaderCutsWhatNeverCommitted: a leader whose followers are gone
// writes segments that never commit (to a partition it has and to one it
// creates), steps down, freezes (no flush pass, no state file) and is
// closed, as comb serve does before it restarts. The followers come back,
// elect one of them, and commit other messages at the same offsets. The old
// leader, reopened on its directory, cuts its files back to what committed
// and applies the others' entries: every node then holds the same messages at
// the same offsets, and none holds a message that never committed.
func TestDeposedLeaderCutsWhatNeverCommitted(t *testing.T) {
	// A lease long enough that the leader still leads when it pushes after
	// its followers closed.
	nodes := startClusterWith(t, 3, raftTiming{heartbeat: time.Second, election: time.Second, lease: time.Second})
	leader := waitLeader(t, nodes)
	res, err := leader.b.Push([]PushItem{{Queue: "q", Partition: "p0", TransactionID: "c1", Payload: []byte(`1`)}})
	require.NoError(t, err)
	require.Equal(t, PushQueued, res[0].Status)
	pid := res[0].PartitionID
	followers := followersOf(nodes, leader)
	for _, f := range followers {
		waitMessage(t, f, pid, "c1", `1`)
		f.close()
	}

	// No quorum: these append to the files, then fail as raft steps down.
	errs := make(chan error, 2)
	go func() {
		_, err := leader.b.Push([]PushItem{
			{Queue: "q", Partition: "p0", TransactionID: "lost1", Payload: []byte(`"x"`)},
			{Queue: "q", Partition: "p0", TransactionID: "lost2", Payload: []byte(`"x"`)},
		})
		errs <- err
	}()
	go func() {
		_, err := leader.b.Push([]PushItem{{Queue: "q", Partition: "fresh", TransactionID: "lost3", Payload: []byte(`"x"`)}})
		errs <- err
	}()
	p0 := leader.b.lookupPartitionByID(parseTestUUID(t, pid))
	require.Eventually(t, func() bool { return p0.log.NextOffset() == 4 }, 5*time.Second, time.Millisecond,
		"the segments are in the old leader's file")
	// A flush pass meanwhile records the partition's summary (then fails
	// on its checkpoint): no further than what committed.
	require.Error(t, leader.b.flushPass())
	require.Error(t, <-errs)
	require.Error(t, <-errs)
	select {
	case <-leader.b.Stale():
	case <-time.After(10 * time.Second):
		t.Fatal("the leader that lost its quorum was not deposed")
	}
	require.ErrorIs(t, leader.b.flushPass(), ErrStale, "a deposed node writes no state file")
	old := leader
	old.close()

	for _, f := range followers {
		f.open(t)
	}
	leader = waitLeader(t, followers)
	var items []PushItem
	for i := range 3 {
		items = append(items, PushItem{Queue: "q", Partition: "p0", TransactionID: fmt.Sprintf("c%d", i+2), Payload: []byte(fmt.Sprint(i + 2))})
	}
	items = append(items, PushItem{Queue: "q", Partition: "fresh", TransactionID: "f1", Payload: []byte(`"f"`)})
	res, err = leader.b.Push(items)
	require.NoError(t, err)
	freshID := res[3].PartitionID

	old.open(t)
	for _, n := range nodes {
		for i := 1; i <= 4; i++ {
			tx := fmt.Sprintf("c%d", i)
			waitMessage(t, n, pid, tx, fmt.Sprint(i))
			d, err := findMsg(n.b, pid, tx)
			require.NoError(t, err)
			require.Equal(t, uint64(i), d.offset, "node %s: %s at its committed offset", n.id, tx)
		}
		waitMessage(t, n, freshID, "f1", `"f"`)
		for _, tx := range []string{"lost1", "lost2"} {
			_, err := findMsg(n.b, pid, tx)
			require.Error(t, err, "node %s holds %s, which never committed", n.id, tx)
		}
		p := n.b.lookupPartitionByID(parseTestUUID(t, pid))
		require.Equal(t, uint64(5), p.log.NextOffset(), "node %s", n.id)
		f := n.b.lookupPartitionByID(parseTestUUID(t, freshID))
		require.Equal(t, uint64(2), f.log.NextOffset(), "node %s", n.id)
		d, err := findMsg(n.b, freshID, "f1")
		require.NoError(t, err)
		require.Equal(t, uint64(1), d.offset, "node %s", n.id)
	}
}
