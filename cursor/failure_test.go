package cursor

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// mustHold checks that every key in want holds exactly its state in e.
func mustHold(t *testing.T, e *Engine, want map[Key]lease.State, msg string) {
	t.Helper()
	for k, s := range want {
		got, _ := e.Get(k)
		require.Equalf(t, s, got, "%s: %v", msg, k)
	}
}

// TestRefusedCheckpointIsRetried (issue 10, issue 14): a log that refuses a
// checkpoint for a retryable reason (out of space) fails only that
// generation's waiters; the changes stay in memory and the next Wait writes
// them once the log takes entries again.
func TestRefusedCheckpointIsRetried(t *testing.T) {
	for _, where := range []string{"append", "wait"} {
		t.Run("the log refuses at "+where, func(t *testing.T) {
			e, log, m := startT(t)
			a, b := Key{pid(1), "g"}, Key{pid(2), "g"}
			e.Set(a, lease.State{Committed: 1})
			require.NoError(t, e.Wait())
			set := func(err error) {
				if where == "append" {
					log.setAppendErr(err)
				} else {
					log.setWaitErr(err)
				}
			}
			set(errLogFull)
			e.Set(b, lease.State{Committed: 2})
			err := e.Wait()
			var ce *CheckpointError
			require.ErrorAs(t, err, &ce, "Wait fails with a *CheckpointError")
			assert.ErrorIs(t, err, errLogFull, "the log's error is inside")
			assert.False(t, ce.Sticky, "a full log is a state, not a sticky failure")
			f, failing := e.Failure()
			require.True(t, failing)
			assert.False(t, f.Sticky)
			assert.ErrorIs(t, f.Err, errLogFull)
			require.Error(t, e.Wait(), "still full: the retry fails too")

			// A crash now keeps only what a Wait acknowledged.
			e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
			mustHold(t, e2, map[Key]lease.State{a: {Committed: 1}}, "crash while the log is full")

			set(nil)
			require.NoError(t, e.Wait(), "space is back: the kept change is written")
			_, failing = e.Failure()
			assert.False(t, failing, "healthy again after the first good checkpoint")
			e3, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
			mustHold(t, e3, map[Key]lease.State{a: {Committed: 1}, b: {Committed: 2}}, "crash after the retry")
		})
	}
}

// TestStickyLogFailure: an error the log calls not retryable (its write or
// fdatasync failed: commitlog.ErrFailed) fails every later Wait until a
// restart, and Failure says Sticky.
func TestStickyLogFailure(t *testing.T) {
	e, log, m := startT(t)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	log.setWaitErr(errLogFailed)
	e.Set(Key{pid(2), "g"}, lease.State{Committed: 2})
	var ce *CheckpointError
	require.ErrorAs(t, e.Wait(), &ce)
	assert.True(t, ce.Sticky, "Log.Retryable said no")
	log.setWaitErr(nil)
	e.Set(Key{pid(3), "g"}, lease.State{Committed: 3})
	require.ErrorIs(t, e.Wait(), errLogFailed, "sticky: no more checkpoints until a restart")
	f, failing := e.Failure()
	require.True(t, failing)
	assert.True(t, f.Sticky)
	_, err := e.Snapshot()
	require.ErrorIs(t, err, errLogFailed, "nor snapshots")
	assert.ErrorIs(t, e.Close(), errLogFailed, "Close reports the failure")

	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	mustHold(t, e2, map[Key]lease.State{{pid(1), "g"}: {Committed: 1}}, "a restart recovers what was acknowledged")
}

// TestRetryWritesTheStateAsItIsThen: the changes handed back after a failure
// are keys, not values: the retry writes each key's state as it is then, so
// a change made in between (a caller undoing its claim, a deletion) wins.
func TestRetryWritesTheStateAsItIsThen(t *testing.T) {
	e, log, m := startT(t)
	e.splitBytes = 64 // a body per shard: the failure hits a generation half way
	keys := make([]Key, 10)
	for i := range keys {
		keys[i] = keyIn(i*6, "g")
		e.Set(keys[i], lease.State{Committed: 1, Lease: lease.Lease{ID: pid(byte(i + 1)), Start: 2, End: 3, Attempts: 1}})
	}
	var appends int
	log.onAppend = func(uint64) {
		appends++
		if appends == 4 {
			log.setWaitErr(errLogFull) // the fourth body of the generation fails
		}
	}
	require.ErrorIs(t, e.Wait(), errLogFull)
	log.onAppend = nil
	log.setWaitErr(nil)
	// The claims failed: the caller undoes them (and deletes one cursor).
	want := map[Key]lease.State{}
	for i, k := range keys {
		if i == 7 {
			e.Delete(k)
			continue
		}
		e.Set(k, lease.State{Committed: 1})
		want[k] = lease.State{Committed: 1}
	}
	require.NoError(t, e.Wait())
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	assert.Equal(t, want, dumpOf(e2).States, "the bodies before the failure are in the log, but the retry overwrote every key")
}

// TestBackgroundRetryEndsTheFailure: with no Wait at all, the writer retries
// a failed checkpoint by itself once the log takes entries, and Failure clears.
func TestBackgroundRetryEndsTheFailure(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	log := newMemLog(1, nil)
	e, _, err := Open("/data/cursor", Options{FS: m, Log: log, CheckpointInterval: time.Millisecond})
	require.NoError(t, err)
	e.Start()
	defer e.Close()
	log.setAppendErr(errLogFull)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 9})
	require.ErrorIs(t, e.Wait(), errLogFull)
	log.setAppendErr(nil)
	require.Eventually(t, func() bool { _, failing := e.Failure(); return !failing }, 10*time.Second, time.Millisecond,
		"the ticker retries within retryDelay")
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	mustHold(t, e2, map[Key]lease.State{{pid(1), "g"}: {Committed: 9}}, "after the background retry")
}

// TestSnapshotFaultAtEveryBoundary (issue 10, issue 14) runs one scenario
// (checkpoints and snapshots, the log truncated behind each snapshot that
// succeeded, as the broker's flush pass does) over a strict twin, failing
// each file operation in turn with ENOSPC and with EIO. A failed Snapshot
// returns an error and installs nothing; every Wait that returned nil
// survives a crash; once the fault is gone, a Snapshot succeeds.
func TestSnapshotFaultAtEveryBoundary(t *testing.T) {
	type run struct {
		e     *Engine
		log   *memLog
		acked map[Key]lease.State
	}
	scenario := func(t *testing.T, fsys vfs.FS) (run, bool) {
		log := newMemLog(1, nil)
		e, _, err := Open("/data/cursor", Options{FS: fsys, Log: log, CheckpointInterval: time.Hour})
		if err != nil {
			return run{}, false
		}
		e.Start()
		r := run{e: e, log: log, acked: map[Key]lease.State{}}
		for i := range 6 {
			k := Key{pid(byte(i)), "g"}
			s := lease.State{Committed: uint64(i + 1), Lease: lease.Lease{ID: pid(byte(100 + i)), Start: 1, End: 2, Attempts: 1}}
			e.Set(k, s)
			require.NoError(t, e.Wait(), "the log is healthy: only files fail")
			r.acked[k] = s
			if i%2 == 1 {
				if from, err := e.Snapshot(); err == nil {
					log.truncateBefore(from)
				}
			}
		}
		return r, true
	}
	rec := errorfs.New(vfs.NewStrictMem("/data"))
	rec.Record()
	r, ok := scenario(t, rec)
	require.True(t, ok)
	require.NoError(t, r.e.Close())
	trace := rec.Trace()
	ops := map[errorfs.Op]int{}
	for _, c := range trace {
		ops[c.Op]++
	}
	require.Equal(t, 3, ops[errorfs.OpRename], "the scenario installed three snapshots")
	require.Positive(t, ops[errorfs.OpRemove], "and removed the ones they replaced")
	for i, c := range trace {
		if c.Op == errorfs.OpRead {
			continue
		}
		for _, ferr := range []error{unix.ENOSPC, unix.EIO} {
			t.Run(fmt.Sprintf("%d %s %s %v", i, c.Op, c.Path, ferr), func(t *testing.T) {
				m := vfs.NewStrictMem("/data")
				f := errorfs.New(m)
				ft := errorfs.FaultAt(trace, i, ferr)
				ft.Short = c.Op == errorfs.OpWrite
				f.Inject(ft)
				r, ok := scenario(t, f)
				if !ok {
					return // the fault hit Open: nothing was acknowledged
				}
				defer r.e.Close()
				e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", r.log.crash(nil))
				mustHold(t, e2, r.acked, "crash with the fault in place")
				require.NoError(t, e2.Close())

				f.Clear()
				from, err := r.e.Snapshot()
				require.NoError(t, err, "the fault is gone: a snapshot succeeds")
				r.log.truncateBefore(from)
				e3, _, _ := recoverT(t, m.Crash(false), "/data/cursor", r.log.crash(nil))
				mustHold(t, e3, r.acked, "crash after the retry")
			})
		}
	}
}

// TestCrashWhileFailingKeepsWhatWasAcknowledged: random changes, Waits and
// snapshots while the log fails now and then; a crash that keeps an
// arbitrary part of the unacknowledged checkpoints recovers every key at its
// acknowledged state or a later one that was set.
func TestCrashWhileFailingKeepsWhatWasAcknowledged(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 14))
			e, log, m := startT(t)
			acked := map[Key]uint64{} // committed offset a Wait returned for
			set := map[Key]uint64{}   // every value set since the last ack
			for step := range 300 {
				k := Key{pid(byte(rng.IntN(8))), "g"}
				switch r := rng.IntN(10); {
				case r < 2:
					log.setWaitErr([]error{nil, errLogFull}[rng.IntN(2)])
				case r < 3:
					if from, err := e.Snapshot(); err == nil {
						log.truncateBefore(from)
					}
				default:
					v := uint64(step + 1)
					e.Set(k, lease.State{Committed: v})
					set[k] = v
					if e.Wait() == nil {
						for kk, vv := range set {
							acked[kk] = vv
						}
					}
				}
			}
			e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(keepRandom(rng)))
			for k, v := range acked {
				got, _ := e2.Get(k)
				require.GreaterOrEqual(t, got.Committed, v, "%v: an acknowledged commit was lost", k)
				require.LessOrEqual(t, got.Committed, set[k], "%v: a value nobody set", k)
			}
		})
	}
}
