package cursor

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
)

func TestEngineStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	held := lease.State{Committed: 4, Retries: 1, Lease: lease.Lease{ID: pid(9), WorkerID: "w-1", Start: 5, End: 9, ExpiresAtMicros: 1e15, Attempts: 2}}
	remembered := lease.State{Committed: 2, Retries: 2, Lease: lease.Lease{Start: 3, End: 4, Attempts: 3}}
	e, rep := openT(t, dir, Options{})
	assert.Equal(t, &RecoveryReport{}, rep, "issue 3: Open creates the directory and starts empty")
	e.Set(Key{pid(1), "billing"}, lease.State{Committed: 7})
	e.Set(Key{pid(1), "__QUEUE_MODE__"}, held)
	e.Set(Key{pid(2), "billing"}, remembered)
	e.Set(Key{pid(3), "gone"}, lease.State{Committed: 1})
	e.Delete(Key{pid(3), "gone"})
	e.SetSubscription("orders", "billing", Subscription{Mode: SubNew, TimestampMicros: 5, CreatedAtMicros: 5})
	e.SetSubscription("orders", "gone", Subscription{Mode: SubAll})
	e.DeleteSubscription("orders", "gone")
	addRecord(t, e, "tx-1")
	want := dumpOf(e)
	require.NoError(t, e.Close())

	e2, rep2 := openT(t, dir, Options{})
	assert.Equal(t, want, dumpOf(e2), "Close writes a final checkpoint holding everything")
	assert.Equal(t, 1, rep2.Checkpoints)
	assert.Equal(t, []Key{{pid(1), "__QUEUE_MODE__"}}, e2.ByLease(pid(9)), "spec 6: extend finds every key of a lease id")
	assert.Empty(t, e2.ByLease(pid(8)))
	_, ok := e2.Get(Key{pid(3), "gone"})
	assert.False(t, ok, "a deleted cursor stays deleted")
}

func TestByLeaseFollowsSetAndDelete(t *testing.T) {
	e, _ := openT(t, t.TempDir(), Options{NoSync: true})
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

func TestWaitMakesChangesDurableBeforeReturning(t *testing.T) {
	dir := t.TempDir()
	// A long interval: only Wait can trigger the checkpoint in time.
	e, _ := openT(t, dir, Options{CheckpointInterval: time.Hour})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 42})
	require.NoError(t, e.Wait())
	crash := filepath.Join(t.TempDir(), "crash")
	crashCopy(t, e, crash)
	e2, _ := openT(t, crash, Options{})
	s, ok := e2.Get(Key{pid(1), "g"})
	require.True(t, ok, "seed 004: an answer waits until its checkpoint is committed")
	assert.Equal(t, uint64(42), s.Committed)
}

func TestIntervalCheckpointWithoutWait(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: time.Millisecond})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 3})
	require.Eventually(t, func() bool {
		st, err := os.Stat(filepath.Join(dir, journalName(1)))
		return err == nil && st.Size() > record.HeaderSize
	}, 5*time.Second, time.Millisecond, "seed 004: at least every 5 ms while anything changed")
}

func TestManyChangesInOneWindowCostOneCheckpoint(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: time.Hour})
	for i := range 10_000 {
		e.Set(Key{[16]byte{0: byte(i >> 8), 1: byte(i)}, "g"}, lease.State{Committed: uint64(i + 1)})
	}
	require.NoError(t, e.Wait())
	require.NoError(t, e.Wait(), "nothing changed: no second checkpoint")
	require.NoError(t, e.Close())
	_, rep := openT(t, dir, Options{})
	assert.Equal(t, 1, rep.Checkpoints, "issue 3: 10,000 acks inside one window cost one write and one sync")
}

func TestConcurrentWaitersAllDurable(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{})
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
	crash := filepath.Join(t.TempDir(), "crash")
	crashCopy(t, e, crash)
	e2, _ := openT(t, crash, Options{})
	for w := range 64 {
		require.True(t, waited[w])
		s, _ := e2.Get(Key{pid(byte(w)), "g"})
		assert.Equal(t, uint64(20), s.Committed, "waiter %d", w)
	}
}

func TestRecordsSurviveUntilDropped(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{})
	a := addRecord(t, e, "a")
	b := addRecord(t, e, "b")
	require.NoError(t, e.Close())
	e, _ = openT(t, dir, Options{})
	assert.Equal(t, []Record{{a, []byte("a")}, {b, []byte("b")}}, e.Records(), "redo records are recovered at Open")
	e.DropRecord(a)
	c := addRecord(t, e, "c")
	assert.Greater(t, c, b, "a record id is never handed out twice")
	require.NoError(t, e.Close())
	e, _ = openT(t, dir, Options{})
	assert.Equal(t, []Record{{b, []byte("b")}, {c, []byte("c")}}, e.Records(), "issue 10: DropRecord forgets exactly one record, durably")
}

func TestRecordOverTheLimitIsRefused(t *testing.T) {
	e, _ := openT(t, t.TempDir(), Options{NoSync: true})
	_, err := e.AddRecord(make([]byte, MaxRecordBytes+1))
	require.ErrorIs(t, err, ErrRecordTooLarge)
	assert.Empty(t, e.Records(), "nothing kept")
}

func TestWaitAfterCloseIsErrClosed(t *testing.T) {
	e, _ := openT(t, t.TempDir(), Options{})
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.Wait(), ErrClosed)
	assert.ErrorIs(t, e.Close(), ErrClosed)
}
