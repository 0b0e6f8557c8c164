package cursor

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

// fakeClock is a clock tests set by hand.
type fakeClock struct{ us atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.us.Store(t.UnixMicro())
	return c
}

func (c *fakeClock) now() time.Time          { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.us.Add(d.Microseconds()) }

// startClocked is startT with the engine on clock c.
func startClocked(t *testing.T, c *fakeClock) (*Engine, *memLog) {
	t.Helper()
	log := newMemLog(1, nil)
	e, _, err := Open("/data/cursor", Options{FS: vfs.NewStrictMem("/data"), Log: log, CheckpointInterval: time.Hour, Now: c.now})
	require.NoError(t, err)
	e.Start()
	t.Cleanup(func() { _ = e.Close() })
	return e, log
}

// leasedState is a state holding a lease that expires at exp (µs).
func leasedState(exp int64) lease.State {
	return lease.State{Committed: 4, Lease: lease.Lease{ID: [16]byte{1}, Start: 5, End: 9, ExpiresAtMicros: exp, Attempts: 1}}
}

// TestAppliedLeasesAreRebasedOnTheFollowersClock: issue 22, leases that do
// not trust wall clocks across nodes. A leader's lease has 30 s left by its
// clock when it checkpoints it; a follower whose clock is an hour ahead, or
// an hour behind, and that applies the checkpoint 2 s later holds it until
// 30 s after it applied it by its own clock: never before the leader would
// end it (an hour ahead used to end it at once: the message given out twice).
func TestAppliedLeasesAreRebasedOnTheFollowersClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	lc := newFakeClock(t0)
	leader, log := startClocked(t, lc)
	k := Key{pid(1), "g"}
	exp := t0.Add(30 * time.Second).UnixMicro()
	leader.Set(k, leasedState(exp))
	require.NoError(t, leader.Wait())
	body := log.crash(nil)[0].Body
	require.Equal(t, byte(checkpointVersion), body[0])

	for _, skew := range []time.Duration{time.Hour, -time.Hour, 0} {
		fc := newFakeClock(t0.Add(skew))
		follower, _ := startClocked(t, fc)
		fc.advance(2 * time.Second) // the entry commits and is applied 2 s later
		require.NoError(t, follower.ApplyCommitted(body))
		s, ok := follower.Get(k)
		require.True(t, ok)
		want := fc.now().Add(30 * time.Second).UnixMicro()
		assert.Equal(t, want, s.Lease.ExpiresAtMicros, "skew %v: 30 s from the apply, by the follower's clock", skew)
		assert.True(t, s.Lease.Live(fc.now().Add(29*time.Second).UnixMicro()), "skew %v", skew)
		want0 := leasedState(exp)
		want0.Lease.ExpiresAtMicros = s.Lease.ExpiresAtMicros
		assert.Equal(t, want0, s, "skew %v: nothing else changes", skew)
		follower.Close()
	}
}

// TestAnExpiredLeaseStaysExpiredWhenRebased: a lease already past its expiry
// by the leader's clock (remembered for its attempts) is expired on the
// follower too, by the same margin.
func TestAnExpiredLeaseStaysExpiredWhenRebased(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	leader, log := startClocked(t, newFakeClock(t0))
	k := Key{pid(1), "g"}
	leader.Set(k, leasedState(t0.Add(-5*time.Second).UnixMicro()))
	require.NoError(t, leader.Wait())
	fc := newFakeClock(t0.Add(-time.Hour))
	follower, _ := startClocked(t, fc)
	require.NoError(t, follower.ApplyCommitted(log.crash(nil)[0].Body))
	s, _ := follower.Get(k)
	assert.Equal(t, fc.now().Add(-5*time.Second).UnixMicro(), s.Lease.ExpiresAtMicros)
	assert.False(t, s.Lease.Live(fc.now().UnixMicro()))
}

// TestRecoveryKeepsExpiriesAsWritten: a node replaying its own commit log at
// start (ApplyCheckpoint) reads checkpoints of its own clock: expiries stay
// as written, whatever its clock reads now.
func TestRecoveryKeepsExpiriesAsWritten(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	e, log := startClocked(t, newFakeClock(t0))
	k := Key{pid(1), "g"}
	exp := t0.Add(30 * time.Second).UnixMicro()
	e.Set(k, leasedState(exp))
	require.NoError(t, e.Wait())
	later := newFakeClock(t0.Add(10 * time.Minute))
	e2, _, err := Open("/c", Options{FS: vfs.NewMem(), NoSync: true, Now: later.now})
	require.NoError(t, err)
	require.NoError(t, e2.ApplyCheckpoint(log.crash(nil)[0].Body))
	s, _ := e2.Get(k)
	assert.Equal(t, exp, s.Lease.ExpiresAtMicros)
}

// TestVersion3CheckpointsStillDecode: a checkpoint written before issue 22
// (version 3: no clock) decodes, on recovery and from another node; its
// expiries are taken as written (there is no clock to rebase from).
// The bytes are a version 3 body as the previous build wrote it.
func TestVersion3CheckpointsStillDecode(t *testing.T) {
	k := Key{pid(1), "g"}
	st := leasedState(1_780_000_030_000_000)
	st.Lease.WorkerID = "w"
	enc := newEncoder(nil)
	enc.begin()
	enc.buf = append(enc.buf, checkpointV3)
	enc.state(k, st, false)
	body := append([]byte(nil), enc.body()...)
	require.Equal(t, []byte{3, tagState}, body[:2])

	for _, follower := range []bool{false, true} {
		e, _, err := Open("/c", Options{FS: vfs.NewMem(), NoSync: true, Log: newMemLog(1, nil), Now: newFakeClock(time.Unix(0, 0)).now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		if follower {
			e.Start()
			require.NoError(t, e.ApplyCommitted(body))
		} else {
			require.NoError(t, e.ApplyCheckpoint(body))
		}
		s, ok := e.Get(k)
		require.True(t, ok)
		assert.Equal(t, st, s, "follower %v", follower)
	}
	_, _, _, err := parseCheckpoint([]byte{5})
	assert.ErrorContains(t, err, "want 3 or 4")
}
