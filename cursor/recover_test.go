package cursor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
)

// twoCheckpoints writes two checkpoints and returns the directory, the state
// after the first, the byte where the second starts and the journal length.
func twoCheckpoints(t *testing.T) (dir string, first dump, boundary, end int64) {
	dir = t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: 1 << 40})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 5})
	e.SetSubscription("q", "g", Subscription{Mode: SubNew, TimestampMicros: 9, CreatedAtMicros: 9})
	addRecord(t, e, "redo-1")
	require.NoError(t, e.Wait())
	first = dumpOf(e)
	boundary = journalEnd(t, filepath.Join(dir, journalName(1)))
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 9, Lease: lease.Lease{ID: pid(3), WorkerID: "w", Start: 10, End: 12, ExpiresAtMicros: 77, Attempts: 1}})
	e.Set(Key{pid(2), "h"}, lease.State{Committed: 1})
	e.DeleteSubscription("q", "g")
	addRecord(t, e, "redo-2")
	require.NoError(t, e.Wait())
	require.NoError(t, e.Close())
	end = journalEnd(t, filepath.Join(dir, journalName(1)))
	require.Greater(t, end, boundary)
	return dir, first, boundary, end
}

func TestTornLastCheckpointIsDroppedAtEveryByte(t *testing.T) {
	dir, first, boundary, end := twoCheckpoints(t)
	full, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	require.NoError(t, err)
	full = full[:end] // without the preallocated zeros: the file ends inside the torn checkpoint
	for cut := boundary; cut < end; cut++ {
		t.Run(fmt.Sprintf("issue 3: kill the journal at byte %d of %d", cut, end), func(t *testing.T) {
			d := t.TempDir()
			path := filepath.Join(d, journalName(1))
			require.NoError(t, os.WriteFile(path, full[:cut], 0o644))
			e, rep, err := Open(d, Options{})
			require.NoError(t, err)
			assert.Equal(t, first, dumpOf(e), "the torn checkpoint was never acknowledged; the one before it is whole")
			assert.Equal(t, 1, rep.Checkpoints)
			assert.Equal(t, int64(nonZeroLen(full[boundary:cut])), rep.TornBytes, "a torn last checkpoint is dropped and reported")
			assert.Zero(t, nonZeroLen(readFile(t, path)[boundary:]), "the torn bytes are zeroed")

			// The journal continues cleanly after them.
			e.Set(Key{pid(5), "g"}, lease.State{Committed: 3})
			require.NoError(t, e.Close())
			e2, rep2, err := Open(d, Options{})
			require.NoError(t, err)
			defer e2.Close()
			assert.Equal(t, 2, rep2.Checkpoints)
			assert.Zero(t, rep2.TornBytes)
			s, _ := e2.Get(Key{pid(5), "g"})
			assert.Equal(t, uint64(3), s.Committed)
		})
	}
}

func TestCorruptLastCheckpointIsDropped(t *testing.T) {
	dir, first, boundary, end := twoCheckpoints(t)
	full, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	require.NoError(t, err)
	full = full[:end]
	for pos := boundary; pos < end; pos++ {
		t.Run(fmt.Sprintf("issue 3: a flipped byte at %d in the last checkpoint", pos), func(t *testing.T) {
			d := t.TempDir()
			b := append([]byte(nil), full...)
			b[pos] ^= 0x40
			require.NoError(t, os.WriteFile(filepath.Join(d, journalName(1)), b, 0o644))
			e, rep, err := Open(d, Options{})
			require.NoError(t, err)
			defer e.Close()
			assert.Equal(t, first, dumpOf(e))
			assert.Equal(t, int64(nonZeroLen(b[boundary:])), rep.TornBytes)
		})
	}
}

func TestCorruptionBeforeValidCheckpointsIsAnError(t *testing.T) {
	dir, _, boundary, _ := twoCheckpoints(t)
	path := filepath.Join(dir, journalName(1))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b = b[:journalEnd(t, path)]
	for _, pos := range []int64{0, 9, record.HeaderSize + 3, boundary - 1} {
		t.Run(fmt.Sprintf("style.md: mid-journal damage at byte %d is reported, not truncated", pos), func(t *testing.T) {
			d := t.TempDir()
			c := append([]byte(nil), b...)
			c[pos] ^= 0x01
			require.NoError(t, os.WriteFile(filepath.Join(d, journalName(1)), c, 0o644))
			_, _, err := Open(d, Options{})
			require.ErrorIs(t, err, ErrCorrupt)
			var ce *CorruptionError
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, filepath.Join(d, journalName(1)), ce.File)
			assert.Equal(t, int64(0), ce.StartByte)
			st, err := os.Stat(filepath.Join(d, journalName(1)))
			require.NoError(t, err)
			assert.Equal(t, int64(len(c)), st.Size(), "nothing truncated")
		})
	}
}

func TestCorruptSnapshotIsAnError(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{SnapshotAfterBytes: 1})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 5})
	require.NoError(t, e.Wait())
	require.NoError(t, e.Close())
	files := listDir(t, dir)
	require.Len(t, files.snapshots, 1)
	path := filepath.Join(dir, files.snapshots[0].name)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-1] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, _, err = Open(dir, Options{})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, path, ce.File)
}

func TestSnapshotPlusJournalEqualsLiveState(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SnapshotAfterBytes: 2048}
	e, _ := openT(t, dir, opts)
	rng := rand.New(rand.NewPCG(1, 2))
	var mid dump
	var recIDs []uint64
	crash := filepath.Join(t.TempDir(), "crash")
	for i := range 400 {
		k := Key{pid(byte(rng.IntN(40))), fmt.Sprintf("g%d", rng.IntN(3))}
		switch rng.IntN(10) {
		case 0:
			e.Delete(k)
		case 1:
			e.SetSubscription("q", k.Group, Subscription{Mode: SubMode(rng.IntN(3)), TimestampMicros: int64(i), CreatedAtMicros: int64(i)})
		case 2:
			recIDs = append(recIDs, addRecord(t, e, fmt.Sprint("rec", i)))
		case 3:
			if len(recIDs) > 0 {
				j := rng.IntN(len(recIDs))
				e.DropRecord(recIDs[j])
				recIDs = append(recIDs[:j], recIDs[j+1:]...)
			}
		case 4:
			e.Set(k, lease.State{Committed: uint64(i), Retries: 1, Lease: lease.Lease{ID: pid(byte(i)), WorkerID: "w", Start: uint64(i + 1), End: uint64(i + 5), ExpiresAtMicros: int64(i), Attempts: 2}})
		default:
			e.Set(k, lease.State{Committed: uint64(i)})
		}
		if i%7 == 0 {
			require.NoError(t, e.Wait())
		}
		if i == 250 {
			require.NoError(t, e.Wait())
			mid = dumpOf(e)
			crashCopy(t, e, crash)
		}
	}
	live := dumpOf(e)
	require.NoError(t, e.Close())
	files := listDir(t, dir)
	require.NotEmpty(t, files.snapshots, "the journal passed SnapshotAfterBytes")
	assert.Len(t, files.snapshots, 1, "older snapshots are compacted away")
	for _, j := range files.journals {
		assert.Greater(t, j.seq, files.snapshots[0].seq, "journals covered by the snapshot are deleted")
	}

	e2, rep := openT(t, dir, opts)
	assert.NotEmpty(t, rep.SnapshotLoaded)
	assert.Equal(t, live, dumpOf(e2), "issue 3: snapshot plus journal equals live state")

	e3, _ := openT(t, crash, opts)
	assert.Equal(t, mid, dumpOf(e3), "a crash between writes recovers the state as of the last Wait")
}
