package cursor

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

func TestSnapshotPlusLogEqualsLiveState(t *testing.T) {
	e, log, m := startT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	snapshots := 0
	for i := range 400 {
		k := Key{pid(byte(rng.IntN(40))), fmt.Sprintf("g%d", rng.IntN(3))}
		switch rng.IntN(10) {
		case 0:
			e.Delete(k)
		case 1:
			e.SetSubscription("q", k.Group, Subscription{Mode: SubMode(rng.IntN(3)), TimestampMicros: int64(i), CreatedAtMicros: int64(i)})
		case 2:
			e.DeleteSubscription("q", k.Group)
		case 3:
			e.Set(k, lease.State{Committed: uint64(i), Retries: 1, Lease: lease.Lease{ID: pid(byte(i)), WorkerID: "w", Start: uint64(i + 1), End: uint64(i + 5), ExpiresAtMicros: int64(i), Attempts: 2}})
		default:
			e.Set(k, lease.State{Committed: uint64(i)})
		}
		if i%7 == 0 {
			require.NoError(t, e.Wait())
		}
		if i%50 == 49 {
			from, err := e.Snapshot()
			require.NoError(t, err)
			log.truncateBefore(from) // the broker's flush pass
			snapshots++
		}
	}
	require.NoError(t, e.Wait())
	live := dumpOf(e)
	files := listMem(t, m, "/data/cursor")
	require.Len(t, files.snapshots, 1, "each snapshot removes the one it replaces")

	e2, _, rep := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	assert.Equal(t, files.snapshots[0].name, rep.SnapshotLoaded)
	assert.Equal(t, live, dumpOf(e2), "issue 14: the snapshot plus the log's checkpoints from replayFrom equal the live state")
	assert.Equal(t, 8, snapshots)
}

// TestReplayFromCoversACheckpointCollectedDuringTheRead: a snapshot reads
// shard by shard while checkpoints go on. A change to a shard the read has
// passed, checkpointed while the read goes on, is in no snapshot: replayFrom
// must be at or below that checkpoint (the first collected after the read
// began), or a truncation behind replayFrom loses an acknowledged change.
func TestReplayFromCoversACheckpointCollectedDuringTheRead(t *testing.T) {
	e, log, m := startT(t)
	passed, ahead := keyIn(10, "g"), keyIn(50, "g")
	e.Set(passed, lease.State{Committed: 1})
	e.Set(ahead, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	log.other(5) // pushes between the checkpoints
	var during uint64
	e.snapshotReadHook = func(i int) {
		if i != 30 {
			return
		}
		e.Set(passed, lease.State{Committed: 2}) // the read is past shard 10
		e.Set(ahead, lease.State{Committed: 2})  // not yet at shard 50
		require.NoError(t, e.Wait())
		during = log.lastLSN()
		log.other(5)
	}
	from, err := e.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, during, from, "replayFrom is the first checkpoint collected after the read began")
	log.truncateBefore(from)
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	mustHold(t, e2, map[Key]lease.State{passed: {Committed: 2}, ahead: {Committed: 2}}, "the acknowledged changes survive the truncation")
}

// TestIdleSnapshotAdvancesReplayFrom: with nothing changing, a snapshot
// still learns an LSN past everything in the log (its writer appends one
// empty checkpoint), so an idle cursor engine never keeps the broker from
// truncating its log.
func TestIdleSnapshotAdvancesReplayFrom(t *testing.T) {
	e, log, m := startT(t)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 7})
	require.NoError(t, e.Wait()) // LSN 1
	log.other(100)               // LSNs 2..101: pushes
	from, err := e.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, uint64(102), from, "issue 14: an idle engine lets the log go up to its end")
	empty, err := checkpointEntries(log.entries[len(log.entries)-1].Body)
	require.NoError(t, err)
	assert.Empty(t, empty, "one empty checkpoint")
	from2, err := e.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, uint64(103), from2)
	log.truncateBefore(from2)
	e2, _, rep := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	assert.Equal(t, uint64(103), rep.ReplayFrom)
	mustHold(t, e2, map[Key]lease.State{{pid(1), "g"}: {Committed: 7}}, "everything comes from the snapshot")
}

// TestSnapshotIsInstalledOnlyOnceWhatItReadIsDurable: a claim made while the
// snapshot reads is live state; if the checkpoint that would hold it fails,
// the caller undoes the claim, so the snapshot must not be installed.
func TestSnapshotIsInstalledOnlyOnceWhatItReadIsDurable(t *testing.T) {
	e, log, m := startT(t)
	k := keyIn(50, "g")
	e.Set(k, lease.State{Committed: 3})
	require.NoError(t, e.Wait())
	first, err := e.Snapshot()
	require.NoError(t, err)
	claim := lease.State{Committed: 3, Lease: lease.Lease{ID: pid(9), Start: 4, End: 9, Attempts: 1}}
	e.snapshotReadHook = func(i int) {
		if i == 20 {
			e.Set(k, claim) // the read reaches shard 50 later and holds it
			log.setAppendErr(errLogFull)
		}
	}
	_, err = e.Snapshot()
	var ce *CheckpointError
	require.ErrorAs(t, err, &ce, "the checkpoint covering the read failed")
	files := listMem(t, m, "/data/cursor")
	assert.Equal(t, []seqFile{{snapshotName(first), first, 3}}, files.snapshots, "the old snapshot stays")
	assert.Empty(t, files.tmps, "the temporary file is removed")

	e.snapshotReadHook = nil
	log.setAppendErr(nil)
	e.Set(k, lease.State{Committed: 3}) // the pop failed: its claim is undone
	require.NoError(t, e.Wait())
	e2, _, _ := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
	mustHold(t, e2, map[Key]lease.State{k: {Committed: 3}}, "the undone claim is not recovered")
}

// TestSnapshotsUnderConcurrentChanges: writers Set and Wait their own keys
// while snapshots are taken and the log truncated behind each; a crash that
// keeps an arbitrary part of the unacknowledged checkpoints recovers every
// key at its acknowledged value or a later one that was set.
func TestSnapshotsUnderConcurrentChanges(t *testing.T) {
	e, log, m := startT(t)
	const writers, keysEach = 8, 30 // pid takes a byte
	var acked, set [writers * keysEach]atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for v := uint64(1); ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				i := w*keysEach + rng.IntN(keysEach)
				set[i].Store(v)
				e.Set(Key{pid(byte(i)), "g"}, lease.State{Committed: v})
				if e.Wait() == nil {
					acked[i].Store(v)
				}
			}
		}()
	}
	var lastFrom uint64
	for range 30 {
		from, err := e.Snapshot()
		require.NoError(t, err)
		require.GreaterOrEqual(t, from, lastFrom, "replayFrom never moves back")
		lastFrom = from
		log.truncateBefore(from)
	}
	// The crash: what was acknowledged before it must be in what survives.
	var ackedBefore [writers * keysEach]uint64
	for i := range acked {
		ackedBefore[i] = acked[i].Load()
	}
	survivors := log.crash(keepRandom(rand.New(rand.NewPCG(7, 7))))
	snap := m.Crash(false)
	close(stop)
	wg.Wait()
	e2, _, _ := recoverT(t, snap, "/data/cursor", survivors)
	for i := range acked {
		got, _ := e2.Get(Key{pid(byte(i)), "g"})
		require.GreaterOrEqual(t, got.Committed, ackedBefore[i], "key %d: an acknowledged commit was lost", i)
		require.LessOrEqual(t, got.Committed, set[i].Load(), "key %d: a value nobody set", i)
	}
}

func TestCorruptSnapshotIsAnError(t *testing.T) {
	e, log, m := startT(t)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 5})
	require.NoError(t, e.Wait())
	from, err := e.Snapshot()
	require.NoError(t, err)
	path := "/data/cursor/" + snapshotName(from)
	good := m.Bytes(path)
	for _, pos := range []int{0, 20, len(good) - 1} {
		b := append([]byte(nil), good...)
		b[pos] ^= 0x10
		m.SetBytes(path, b)
		_, _, err = Open("/data/cursor", Options{FS: m, Log: log})
		var ce *CorruptionError
		require.ErrorAs(t, err, &ce, "style.md: a damaged snapshot is reported, never skipped (the log may be truncated behind it)")
		assert.Equal(t, path, ce.File)
		assert.Equal(t, b, m.Bytes(path), "nothing changed")
	}
	m.SetBytes(path, good)
	m.SetBytes("/data/cursor/"+snapshotName(from+1), good)
	_, _, err = Open("/data/cursor", Options{FS: m, Log: log})
	assert.ErrorIs(t, err, ErrCorrupt, "a snapshot whose name and trailer disagree")
}

// TestOpenUsesTheNewestSnapshot: a crash after a snapshot was renamed into
// place but before the one it replaces was removed leaves both; Open loads
// the newest and removes the unfinished temporary file; the next Snapshot
// removes the older one.
func TestOpenUsesTheNewestSnapshot(t *testing.T) {
	e, _, m := startT(t)
	k := Key{pid(1), "g"}
	e.Set(k, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	first, err := e.Snapshot()
	require.NoError(t, err)
	old := m.Bytes("/data/cursor/" + snapshotName(first))
	e.Set(k, lease.State{Committed: 2})
	require.NoError(t, e.Wait())
	second, err := e.Snapshot()
	require.NoError(t, err)
	require.NoError(t, e.Close())
	m.SetBytes("/data/cursor/"+snapshotName(first), old)
	m.SetBytes("/data/cursor/"+snapshotTmp, []byte("half a snapshot"))
	require.NoError(t, m.SyncDir("/data/cursor"))

	e2, _, rep := recoverT(t, m, "/data/cursor", nil) // no log: only the snapshot speaks
	assert.Equal(t, snapshotName(second), rep.SnapshotLoaded)
	mustHold(t, e2, map[Key]lease.State{k: {Committed: 2}}, "the newest snapshot")
	files := listMem(t, m, "/data/cursor")
	assert.Empty(t, files.tmps)
	assert.Len(t, files.snapshots, 2)
	_, err = e2.Snapshot()
	require.NoError(t, err)
	assert.Len(t, listMem(t, m, "/data/cursor").snapshots, 1)
}
