package cursor

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

func TestEngineStateSurvivesRestart(t *testing.T) {
	held := lease.State{Committed: 4, Retries: 1, Lease: lease.Lease{ID: pid(9), WorkerID: "w-1", Start: 5, End: 9, ExpiresAtMicros: 1e15, Attempts: 2}}
	remembered := lease.State{Committed: 2, Retries: 2, Lease: lease.Lease{Start: 3, End: 4, Attempts: 3}}
	m := vfs.NewStrictMem("/data")
	log := newMemLog(1, nil)
	e, rep, err := Open("/data/cursor", Options{FS: m, Log: log})
	require.NoError(t, err)
	assert.Equal(t, &RecoveryReport{ReplayFrom: 1}, rep, "issue 3: Open creates the directory and starts empty; replay everything")
	e.Start()
	e.Set(Key{pid(1), "billing"}, lease.State{Committed: 7})
	e.Set(Key{pid(1), "__QUEUE_MODE__"}, held)
	e.Set(Key{pid(2), "billing"}, remembered)
	e.Set(Key{pid(3), "gone"}, lease.State{Committed: 1})
	e.Delete(Key{pid(3), "gone"})
	e.SetSubscription("orders", "billing", Subscription{Mode: SubNew, TimestampMicros: 5, CreatedAtMicros: 5})
	e.SetSubscription("orders", "gone", Subscription{Mode: SubAll})
	e.DeleteSubscription("orders", "gone")
	want := dumpOf(e)
	require.NoError(t, e.Close())
	assert.Equal(t, 1, log.checkpoints(), "Close hands one final checkpoint holding everything to the log")

	e2, _, rep2 := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	assert.Equal(t, uint64(1), rep2.ReplayFrom)
	assert.Equal(t, want, dumpOf(e2), "the log's checkpoints replayed over no snapshot give the state back")
	assert.Equal(t, []Key{{pid(1), "__QUEUE_MODE__"}}, e2.ByLease(pid(9)), "spec 6: extend finds every key of a lease id")
	assert.Empty(t, e2.ByLease(pid(8)))
	_, ok := e2.Get(Key{pid(3), "gone"})
	assert.False(t, ok, "a deleted cursor stays deleted")
}

func TestByLeaseFollowsSetAndDelete(t *testing.T) {
	e, _, _ := startT(t)
	l := lease.State{Lease: lease.Lease{ID: pid(7), Start: 1, End: 2, Attempts: 1}}
	a, b := Key{pid(1), "g"}, Key{pid(2), "g"}
	e.Set(a, l)
	e.Set(b, l)
	assert.ElementsMatch(t, []Key{a, b}, e.ByLease(pid(7)), "spec 6: every partition of a multi-partition pop")
	e.Set(a, lease.State{Committed: 2})
	assert.Equal(t, []Key{b}, e.ByLease(pid(7)), "a released lease is no longer found")
	e.Delete(b)
	assert.Empty(t, e.ByLease(pid(7)))
}

func TestWaitReturnsOnlyOnceTheCheckpointIsDurable(t *testing.T) {
	// A long interval: only Wait can trigger the checkpoint in time.
	e, log, m := startT(t)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 42})
	require.NoError(t, e.Wait())
	// A crash that keeps nothing the log did not promise.
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	s, ok := e2.Get(Key{pid(1), "g"})
	require.True(t, ok, "seed 004: an answer waits until its checkpoint is committed")
	assert.Equal(t, uint64(42), s.Committed)
}

func TestIntervalCheckpointWithoutWait(t *testing.T) {
	log := newMemLog(1, nil)
	e, _, err := Open(t.TempDir(), Options{Log: log, CheckpointInterval: time.Millisecond, NoSync: true})
	require.NoError(t, err)
	defer e.Close()
	e.Start()
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 3})
	require.Eventually(t, func() bool { return log.checkpoints() == 1 }, 5*time.Second, time.Millisecond,
		"seed 004: at least every 5 ms while anything changed")
}

func TestManyChangesInOneWindowCostOneCheckpoint(t *testing.T) {
	e, log, _ := startT(t)
	for i := range 10_000 {
		e.Set(Key{[16]byte{0: byte(i >> 8), 1: byte(i)}, "g"}, lease.State{Committed: uint64(i + 1)})
	}
	require.NoError(t, e.Wait())
	require.NoError(t, e.Wait(), "nothing changed: no second checkpoint")
	require.NoError(t, e.Close())
	assert.Equal(t, 1, log.checkpoints(), "issue 3: 10,000 acks inside one window cost one checkpoint")
}

func TestConcurrentWaitersAllDurable(t *testing.T) {
	e, log, m := startT(t)
	var wg sync.WaitGroup
	waited := make([]bool, 64)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				e.Set(Key{pid(byte(w)), "g"}, lease.State{Committed: uint64(i + 1)})
				if e.Wait() != nil {
					return
				}
			}
			waited[w] = true
		}()
	}
	wg.Wait()
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	for w := range 64 {
		require.True(t, waited[w])
		s, _ := e2.Get(Key{pid(byte(w)), "g"})
		assert.Equal(t, uint64(20), s.Committed, "waiter %d", w)
	}
}

func TestLifecycleErrors(t *testing.T) {
	log := newMemLog(1, nil)
	e, _, err := Open(t.TempDir(), Options{Log: log, NoSync: true})
	require.NoError(t, err)
	assert.ErrorIs(t, e.Wait(), ErrNotStarted, "recovery is not over: nobody may be promised durability")
	_, err = e.Snapshot()
	assert.ErrorIs(t, err, ErrNotStarted)
	e.Start()
	e.Start() // a second Start does nothing
	assert.ErrorIs(t, e.ApplyCheckpoint([]byte{formatVersion}), ErrStarted, "replay belongs before Start")
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.Wait(), ErrClosed)
	assert.ErrorIs(t, e.Close(), ErrClosed)
	_, err = e.Snapshot()
	assert.ErrorIs(t, err, ErrClosed)

	e2, _, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	assert.PanicsWithValue(t, "cursor: Start without Options.Log", e2.Start, "a missing Log is the caller's bug")
	e2.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	assert.NoError(t, e2.Close(), "an engine never started writes nothing and closes cleanly")
}
