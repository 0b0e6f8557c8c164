package cursor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

// TestApplyCheckpointInLSNOrderGivesTheSameState (issue 14): the bodies the
// writer handed to the log, applied in LSN order over a snapshot from its
// replayFrom on (or from any earlier LSN), give the state the engine had.
func TestApplyCheckpointInLSNOrderGivesTheSameState(t *testing.T) {
	e, log, m := startT(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var from uint64
	for i := range 300 {
		k := Key{pid(byte(rng.IntN(30))), fmt.Sprintf("g%d", rng.IntN(2))}
		switch rng.IntN(8) {
		case 0:
			e.Delete(k)
		case 1:
			e.SetSubscription("q", k.Group, Subscription{Mode: SubTimestamp, TimestampMicros: int64(i), CreatedAtMicros: int64(i)})
		case 2:
			e.Set(k, lease.State{Committed: uint64(i), Lease: lease.Lease{ID: pid(byte(i)), Start: uint64(i + 1), End: uint64(i + 3), Attempts: 1}})
		default:
			e.Set(k, lease.State{Committed: uint64(i)})
		}
		if rng.IntN(4) == 0 {
			require.NoError(t, e.Wait())
		}
		if i == 150 {
			var err error
			from, err = e.Snapshot()
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.Wait())
	live := dumpOf(e)
	entries := log.crash(nil)
	for _, start := range []uint64{from, 1} {
		t.Run(fmt.Sprintf("replay from %d", start), func(t *testing.T) {
			e2, _, err := Open("/data/cursor", Options{FS: m.Crash(false), Log: newMemLog(1, entries)})
			require.NoError(t, err)
			for _, en := range entries {
				if en.LSN >= start {
					require.NoError(t, e2.ApplyCheckpoint(en.Body))
				}
			}
			assert.Equal(t, live, dumpOf(e2), "last writer wins: replaying covered checkpoints too is harmless")
			require.NoError(t, e2.Close())
		})
	}
}

// TestReplayedCheckpointsAreNotWrittenAgain: what ApplyCheckpoint applied is
// in the log already; the first checkpoint after Start carries only new
// changes.
func TestReplayedCheckpointsAreNotWrittenAgain(t *testing.T) {
	e, log, m := startT(t)
	for i := range 50 {
		e.Set(Key{pid(byte(i)), "g"}, lease.State{Committed: 1})
	}
	require.NoError(t, e.Wait())
	e2, log2, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	assert.Equal(t, 50, e2.Len())
	require.NoError(t, e2.Wait())
	assert.Equal(t, 1, log2.checkpoints(), "nothing new to checkpoint")
	e2.Set(Key{pid(1), "g"}, lease.State{Committed: 2})
	require.NoError(t, e2.Wait())
	entries := log2.crash(nil)
	var got recorder
	body, err := checkpointEntries(entries[len(entries)-1].Body)
	require.NoError(t, err)
	require.NoError(t, decodeEntries(body, formatVersion, &got))
	assert.Equal(t, []entry{{Kind: tagState, Key: Key{pid(1), "g"}, State: lease.State{Committed: 2}}}, got.got)
}

func TestApplyCheckpointRefusesABadBodyWhole(t *testing.T) {
	good := checkpointBody(sampleEntries()[:2])
	cases := []struct {
		name string
		body []byte
	}{
		{"empty", nil},
		{"another format's version byte", append([]byte{2}, good[1:]...)},
		{"cut inside the second entry", good[:len(good)-3]},
		{"a record tag, which format 3 checkpoints never hold", append(append([]byte(nil), good...), tagRecord, 1, 1, 'x')},
		{"an unknown tag", append(append([]byte(nil), good...), 9)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _, err := Open(t.TempDir(), Options{NoSync: true})
			require.NoError(t, err)
			defer e.Close()
			err = e.ApplyCheckpoint(c.body)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Zero(t, e.Len(), "nothing of the body was applied")
		})
	}
}
