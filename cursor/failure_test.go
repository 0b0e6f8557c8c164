package cursor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

// settle waits until the writer has finished what it does after a checkpoint
// (an extension, a rotation) and any snapshot it started is done.
func settle(e *Engine) {
	e.fileMu.Lock()
	//nolint:staticcheck // an empty critical section: the writer holds fileMu until it is done
	e.fileMu.Unlock()
	e.j.snapWG.Wait()
}

// mustRecover opens the crash twin of m and checks that every key in acked
// holds exactly its acknowledged state.
func mustRecover(t *testing.T, m *vfs.Mem, acked map[Key]lease.State, msg string) *Engine {
	t.Helper()
	e, _, err := Open("/data/cursor", Options{FS: m.Crash(false), CheckpointInterval: time.Hour})
	require.NoError(t, err, msg)
	t.Cleanup(func() { _ = e.Close() })
	for k, want := range acked {
		got, _ := e.Get(k)
		require.Equalf(t, want, got, "%s: %v lost its acknowledged state", msg, k)
	}
	return e
}

// TestFullDiskIsAStateNotAnError (issue 10): once the preallocated space is
// used up on a full disk, Wait fails with ENOSPC but the engine is not
// sticky; freeing space lets the next Wait write every change kept in memory.
func TestFullDiskIsAStateNotAnError(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	e, _, err := Open("/data/cursor", Options{FS: m, CheckpointInterval: time.Hour, PreallocBytes: minPrealloc})
	require.NoError(t, err)
	defer e.Close()
	acked := map[Key]lease.State{}
	set := func(i int) (Key, lease.State, error) {
		k := Key{pid(byte(i)), fmt.Sprintf("group-with-a-long-name-%d", i)}
		s := lease.State{Committed: uint64(i + 1)}
		e.Set(k, s)
		return k, s, e.Wait()
	}
	k, s, err := set(0)
	require.NoError(t, err)
	acked[k] = s
	m.SetCapacity(m.Used()) // the disk is full now: only the preallocated space is left
	i := 1
	for ; i < 10_000; i++ {
		k, s, err := set(i)
		if err != nil {
			require.ErrorIs(t, err, unix.ENOSPC, "a full disk says so")
			var ce *CheckpointError
			require.ErrorAs(t, err, &ce)
			assert.False(t, ce.Sticky)
			break
		}
		acked[k] = s
	}
	require.Greater(t, i, 100, "checkpoints go on into the preallocated space after the disk is full")
	require.Less(t, i, 10_000, "the preallocated space ran out")
	f, failing := e.Failure()
	require.True(t, failing)
	assert.False(t, f.Sticky, "issue 10: ENOSPC is a state, not a sticky error")
	assert.ErrorIs(t, f.Err, unix.ENOSPC)
	for range 5 {
		_, _, err := set(i)
		require.ErrorIs(t, err, unix.ENOSPC, "still full")
	}
	mustRecover(t, m, acked, "crash while the disk is full")

	m.SetCapacity(0)
	require.NoError(t, e.Wait(), "space is back: the kept changes are written")
	_, failing = e.Failure()
	assert.False(t, failing, "healthy again after the first good checkpoint")
	for j := 0; j <= i; j++ {
		acked[Key{pid(byte(j)), fmt.Sprintf("group-with-a-long-name-%d", j)}] = lease.State{Committed: uint64(j + 1)}
	}
	mustRecover(t, m, acked, "crash after space came back")
}

// TestBackgroundRetryEndsTheFailure: with no Wait at all, the writer retries
// a failed checkpoint by itself once space is back, and Failure clears.
func TestBackgroundRetryEndsTheFailure(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	f := vfs.NewFaulty(m)
	e, _, err := Open("/data/cursor", Options{FS: f, CheckpointInterval: time.Millisecond})
	require.NoError(t, err)
	defer e.Close()
	remove := f.Inject(vfs.Fault{Op: vfs.OpWrite, Under: "journal-", Err: unix.ENOSPC})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 9})
	require.ErrorIs(t, e.Wait(), unix.ENOSPC)
	remove()
	require.Eventually(t, func() bool { _, failing := e.Failure(); return !failing }, 10*time.Second, time.Millisecond,
		"the ticker retries within retryDelay")
	mustRecover(t, m, map[Key]lease.State{{pid(1), "g"}: {Committed: 9}}, "after the background retry")
}

// TestFailedWriteLeavesNoBytesBehind: a checkpoint write that fails half way
// (a disk filling up mid-write) leaves a torn frame in the preallocated space;
// the next, shorter checkpoint at the same byte zeros the rest, so only zeros
// follow it and a crash recovers cleanly.
func TestFailedWriteLeavesNoBytesBehind(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	f := vfs.NewFaulty(m)
	e, _, err := Open("/data/cursor", Options{FS: f, CheckpointInterval: time.Hour})
	require.NoError(t, err)
	defer e.Close()
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	end := e.j.size
	for i := range 50 {
		e.Set(Key{pid(byte(10 + i)), "a-long-group-name-to-make-the-frame-long"}, lease.State{Committed: 5})
	}
	remove := f.Inject(vfs.Fault{Op: vfs.OpWrite, Under: "journal-", Err: unix.ENOSPC, Short: true})
	require.ErrorIs(t, e.Wait(), unix.ENOSPC)
	remove()
	path := "/data/cursor/" + journalName(1)
	assert.NotZero(t, nonZeroLen(m.Bytes(path)[end:]), "the failed write left half a frame")
	c := m.Crash(false)
	c.SetBytes(path, m.Bytes(path)) // as if those pages reached the disk before the crash
	e2, rep, err := Open("/data/cursor", Options{FS: c})
	require.NoError(t, err)
	assert.Positive(t, rep.TornBytes, "a crash now finds a torn, unacknowledged checkpoint")
	require.NoError(t, e2.Close())

	// Undo most of the changes, so the retry is shorter than the failed frame.
	for i := range 50 {
		e.Delete(Key{pid(byte(10 + i)), "a-long-group-name-to-make-the-frame-long"})
	}
	e.Set(Key{pid(2), "g"}, lease.State{Committed: 2})
	require.NoError(t, e.Wait())
	b := m.Bytes(path)
	assert.Zero(t, nonZeroLen(b[e.j.size:]), "record: only zeros follow the last checkpoint")
	e3 := mustRecover(t, m, map[Key]lease.State{{pid(1), "g"}: {Committed: 1}, {pid(2), "g"}: {Committed: 2}}, "after the retry")
	assert.Equal(t, 2, e3.Len(), "the deletions were journaled too")
}

// TestFaultAtEveryBoundary (issue 10) runs one scenario (checkpoints, an
// extension, a rotation with its snapshot and compaction) over a strict twin,
// failing each write, sync, rename, removal and directory sync in turn with
// ENOSPC and with EIO. Every Wait that returned nil survives a crash; ENOSPC
// never makes the engine sticky; EIO on the journal's fdatasync does; after
// the fault, a Wait writes everything kept in memory unless sticky.
func TestFaultAtEveryBoundary(t *testing.T) {
	opts := func(fsys vfs.FS) Options {
		return Options{FS: fsys, CheckpointInterval: time.Hour, PreallocBytes: minPrealloc, SnapshotAfterBytes: 60 << 10}
	}
	type run struct {
		acked, all map[Key]lease.State
		e          *Engine
	}
	// scenario runs the steps; ok is false when the fault hit Open itself
	// (nothing was acknowledged then).
	scenario := func(t *testing.T, f *vfs.Faulty) (r run, ok bool) {
		e, _, err := Open("/data/cursor", opts(f))
		if err != nil {
			return run{}, false
		}
		r = run{acked: map[Key]lease.State{}, all: map[Key]lease.State{}, e: e}
		big := make([]byte, 20<<10)
		var recs []uint64
		for i := range 7 {
			k := Key{pid(byte(i)), "g"}
			s := lease.State{Committed: uint64(i + 1), Lease: lease.Lease{ID: pid(byte(100 + i)), Start: 1, End: 2, Attempts: 1}}
			if i >= 1 && i <= 3 {
				big[0] = byte(i)
				id, err := e.AddRecord(big)
				require.NoError(t, err)
				recs = append(recs, id)
			}
			if i == 5 {
				e.DropRecord(recs[0])
			}
			e.Set(k, s)
			r.all[k] = s
			err := e.Wait()
			if err == nil {
				r.acked[k] = s
			} else {
				var ce *CheckpointError
				require.ErrorAs(t, err, &ce, "Wait fails with a *CheckpointError")
			}
			settle(e)
		}
		return r, true
	}
	// Record the scenario (Open's own calls included).
	rec := vfs.NewFaulty(vfs.NewStrictMem("/data"))
	rec.Record()
	r, ok := scenario(t, rec)
	require.True(t, ok)
	require.NoError(t, r.e.Close())
	trace := rec.Trace()
	ops := map[vfs.Op]int{}
	for _, c := range trace {
		ops[c.Op]++
	}
	require.Positive(t, ops[vfs.OpRename], "the scenario took a snapshot")
	require.Positive(t, ops[vfs.OpRemove], "and compacted")
	var files []string
	for _, c := range trace {
		if c.Op == vfs.OpOpen && strings.Contains(c.Path, "journal-") {
			files = append(files, c.Path)
		}
	}
	require.GreaterOrEqual(t, len(files), 2, "the scenario rotated")

	for i, c := range trace {
		if c.Op == vfs.OpRead {
			continue
		}
		for _, ferr := range []error{unix.ENOSPC, unix.EIO} {
			name := fmt.Sprintf("%d %s %s %v", i, c.Op, c.Path, ferr)
			t.Run(name, func(t *testing.T) {
				m := vfs.NewStrictMem("/data")
				f := vfs.NewFaulty(m)
				ft := vfs.FaultAt(trace, i, ferr)
				ft.Short = c.Op == vfs.OpWrite
				f.Inject(ft)
				r, ok := scenario(t, f)
				if !ok {
					return
				}
				mustRecover(t, m, r.acked, "crash with the fault in place")

				failure, failing := r.e.Failure()
				journalSync := c.Op == vfs.OpSync && strings.Contains(c.Path, "journal-")
				if errors.Is(ferr, unix.ENOSPC) || !journalSync {
					assert.False(t, failing && failure.Sticky, "only EIO on the journal's fdatasync is sticky")
				} else {
					require.True(t, failing && failure.Sticky, "EIO on the journal's fdatasync is sticky")
				}
				f.Clear()
				err := r.e.Wait()
				if failing && failure.Sticky {
					require.Error(t, err, "sticky: no more checkpoints")
					mustRecover(t, m, r.acked, "crash after a sticky failure")
					_ = r.e.Close()
					return
				}
				require.NoError(t, err, "the fault is gone: the kept changes are written")
				_, failing = r.e.Failure()
				assert.False(t, failing)
				mustRecover(t, m, r.all, "crash after the retry")
				require.NoError(t, r.e.Close())
				e2, _, err := Open("/data/cursor", opts(m))
				require.NoError(t, err)
				for k, want := range r.all {
					got, _ := e2.Get(k)
					require.Equal(t, want, got)
				}
				require.NoError(t, e2.Close())
			})
		}
	}
}
