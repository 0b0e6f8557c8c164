package cursor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

// TestFollowerAppliesCommittedCheckpoints: a started engine fed another
// engine's checkpoints (ApplyCommitted, issue 15's follower) ends with the
// same state and writes no checkpoint of its own; SnapshotAt installs a
// snapshot whose replay point is the one given, and a recovery from it
// holds the same state.
func TestFollowerAppliesCommittedCheckpoints(t *testing.T) {
	leader, leaderLog, _ := startT(t)
	follower, followerLog, fm := startT(t)

	leader.Set(Key{pid(1), "g"}, lease.State{Committed: 3})
	leader.Set(Key{pid(2), "g"}, lease.State{Committed: 7})
	require.NoError(t, leader.Wait())
	leader.Set(Key{pid(1), "g"}, lease.State{Committed: 5})
	leader.Delete(Key{pid(2), "g"})
	require.NoError(t, leader.Wait())

	last := uint64(0)
	for _, en := range leaderLog.crash(nil) {
		if en.Checkpoint {
			require.NoError(t, follower.ApplyCommitted(en.Body))
			last = en.LSN
		}
	}
	assert.Equal(t, dumpOf(leader), dumpOf(follower))
	require.NoError(t, follower.Wait())
	assert.Zero(t, followerLog.checkpoints(), "applied states are not checkpointed again")

	require.NoError(t, follower.SnapshotAt(last+1))
	e2, _, rep := recoverT(t, fm.Crash(false), "/data/cursor", nil)
	assert.Equal(t, last+1, rep.ReplayFrom)
	assert.Equal(t, dumpOf(leader), dumpOf(e2))
}

func TestApplyCommittedRefusesBadBodiesAndClosedEngines(t *testing.T) {
	e, _, _ := startT(t)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 2})
	assert.ErrorIs(t, e.ApplyCommitted([]byte{0xff, 1, 2}), ErrCorrupt)
	s, _ := e.Get(Key{pid(1), "g"})
	assert.Equal(t, uint64(2), s.Committed, "a bad body changes nothing")
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.ApplyCommitted([]byte{formatVersion}), ErrClosed)
	assert.ErrorIs(t, e.SnapshotAt(1), ErrClosed)
}

// TestPutHoldsAStateWithoutCheckpointingIt: Put (a follower applying another node's
// transaction) stores the state, which a snapshot reads, and writes no checkpoint.
func TestPutHoldsAStateWithoutCheckpointingIt(t *testing.T) {
	e, log, fm := startT(t)
	e.Put(Key{pid(1), "g"}, lease.State{Committed: 9})
	require.NoError(t, e.Wait())
	assert.Zero(t, log.checkpoints(), "nothing to checkpoint")
	s, ok := e.Get(Key{pid(1), "g"})
	require.True(t, ok)
	assert.Equal(t, uint64(9), s.Committed)
	require.NoError(t, e.SnapshotAt(1))
	e2, _, _ := recoverT(t, fm.Crash(false), "/data/cursor", nil)
	s, ok = e2.Get(Key{pid(1), "g"})
	require.True(t, ok)
	assert.Equal(t, uint64(9), s.Committed, "the snapshot holds it")
}
