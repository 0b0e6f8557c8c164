package cursor

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}

// preallocated returns the journal of twoCheckpoints with its preallocated
// zero tail: whole file bytes, the boundary between the checkpoints and the
// logical end.
func preallocated(t *testing.T) (full []byte, first dump, boundary, end int64) {
	dir, first, boundary, end := twoCheckpoints(t)
	full, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	require.NoError(t, err)
	require.Greater(t, int64(len(full)), end, "the journal is preallocated past its last checkpoint")
	require.Zero(t, nonZeroLen(full[end:]), "the preallocated tail is zeros")
	return full, first, boundary, end
}

func TestPreallocatedTailIsTheEndOfTheJournal(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: 1 << 40})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 5})
	require.NoError(t, e.Wait())
	e.Set(Key{pid(2), "g"}, lease.State{Committed: 7})
	require.NoError(t, e.Close())
	path := filepath.Join(dir, journalName(1))
	end, size := journalEnd(t, path), fileSize(t, path)
	assert.Equal(t, int64(minPrealloc), size, "the first extension preallocates 64 KiB")

	e2, rep, err := Open(dir, Options{CheckpointInterval: 1 << 40})
	require.NoError(t, err)
	assert.Equal(t, RecoveryReport{Checkpoints: 2, LastSeq: 2}, *rep, "zeros after the last checkpoint are neither torn nor corrupt")
	assert.Equal(t, size, fileSize(t, path), "the preallocated space is kept")
	s, _ := e2.Get(Key{pid(2), "g"})
	assert.Equal(t, uint64(7), s.Committed)

	e2.Set(Key{pid(3), "g"}, lease.State{Committed: 9})
	require.NoError(t, e2.Close())
	assert.Greater(t, journalEnd(t, path), end, "the next checkpoint overwrites the zeros right after the last one")
	assert.Equal(t, size, fileSize(t, path), "a checkpoint inside preallocated space does not grow the file")
	e3, rep, err := Open(dir, Options{})
	require.NoError(t, err)
	defer e3.Close()
	assert.Equal(t, 3, rep.Checkpoints)
	s, _ = e3.Get(Key{pid(3), "g"})
	assert.Equal(t, uint64(9), s.Committed)
}

func TestTornCheckpointInsidePreallocatedSpaceAtEveryByte(t *testing.T) {
	full, first, boundary, end := preallocated(t)
	for cut := boundary; cut < end; cut++ {
		t.Run(fmt.Sprintf("doc.go: the second checkpoint reached the disk up to byte %d of %d, zeros after", cut, end), func(t *testing.T) {
			d := t.TempDir()
			b := make([]byte, len(full))
			copy(b, full[:cut])
			path := filepath.Join(d, journalName(1))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			e, rep, err := Open(d, Options{})
			require.NoError(t, err)
			assert.Equal(t, first, dumpOf(e), "the torn checkpoint was never acknowledged")
			assert.Equal(t, 1, rep.Checkpoints)
			assert.Equal(t, int64(nonZeroLen(b[boundary:])), rep.TornBytes, "the torn checkpoint's non-zero bytes are reported")
			assert.Equal(t, int64(len(full)), fileSize(t, path), "nothing truncated: the preallocated space is kept")
			assert.Zero(t, nonZeroLen(readFile(t, path)[boundary:]), "record: only zeros follow the last checkpoint again")
			if rep.TornBytes > 0 {
				assert.Equal(t, journalName(1), rep.TornFile)
				assert.Equal(t, b[boundary:boundary+rep.TornBytes], readFile(t, rep.Quarantined), "record: the cut bytes are kept in quarantine")
			}

			e.Set(Key{pid(5), "g"}, lease.State{Committed: 3})
			require.NoError(t, e.Close())
			e2, rep2, err := Open(d, Options{})
			require.NoError(t, err)
			defer e2.Close()
			assert.Equal(t, 2, rep2.Checkpoints, "the journal continues cleanly after the torn checkpoint")
			assert.Zero(t, rep2.TornBytes)
			s, _ := e2.Get(Key{pid(5), "g"})
			assert.Equal(t, uint64(3), s.Committed)
		})
	}
}

func TestTornCheckpointWithLostHeaderIsDropped(t *testing.T) {
	full, first, boundary, end := preallocated(t)
	for _, lost := range []int64{record.HeaderSize, record.HeaderSize + 5, end - boundary - 2} {
		t.Run(fmt.Sprintf("doc.go: the first %d bytes of the last checkpoint never reached the disk, later ones did", lost), func(t *testing.T) {
			d := t.TempDir()
			b := append([]byte(nil), full...)
			clear(b[boundary : boundary+lost])
			b[end-1] = 0x5a // a non-zero byte the crash did write
			require.NoError(t, os.WriteFile(filepath.Join(d, journalName(1)), b, 0o644))
			e, rep, err := Open(d, Options{})
			require.NoError(t, err)
			defer e.Close()
			assert.Equal(t, first, dumpOf(e))
			assert.Equal(t, end-boundary, rep.TornBytes, "non-zero bytes after an all-zero header are a torn tail")
		})
	}
}

func TestCrashAfterExtension(t *testing.T) {
	full, _, _, end := preallocated(t)
	want := func(t *testing.T, d string) dump {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(d, journalName(1)), full, 0o644))
		e, _, err := Open(d, Options{})
		require.NoError(t, err)
		defer e.Close()
		return dumpOf(e)
	}(t, t.TempDir())
	for _, zeros := range []int64{0, 1, record.HeaderSize - 1, record.HeaderSize, record.HeaderSize + 1, 4096 + 7, int64(len(full)) - end} {
		t.Run(fmt.Sprintf("doc.go: a crash mid-extension leaves %d zero bytes after the last checkpoint", zeros), func(t *testing.T) {
			d := t.TempDir()
			path := filepath.Join(d, journalName(1))
			require.NoError(t, os.WriteFile(path, full[:end+zeros], 0o644))
			e, rep, err := Open(d, Options{})
			require.NoError(t, err)
			assert.Equal(t, want, dumpOf(e))
			assert.Equal(t, 2, rep.Checkpoints)
			assert.Zero(t, rep.TornBytes)
			assert.GreaterOrEqual(t, fileSize(t, path), end+zeros, "zeros are kept, not truncated")
			assert.Equal(t, end, journalEnd(t, path), "Open preallocates again after the last checkpoint")

			e.Set(Key{pid(6), "g"}, lease.State{Committed: 4})
			require.NoError(t, e.Close())
			e2, rep2, err := Open(d, Options{})
			require.NoError(t, err)
			defer e2.Close()
			assert.Equal(t, 3, rep2.Checkpoints, "the next checkpoint lands right after the last one, not after the zeros")
			s, _ := e2.Get(Key{pid(6), "g"})
			assert.Equal(t, uint64(4), s.Committed)
		})
	}
}

func TestExtensionsSurviveACrashAfterEveryWait(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: 1 << 40, PreallocBytes: minPrealloc})
	path := filepath.Join(dir, journalName(1))
	rec := make([]byte, 20<<10)
	var sizes []int64
	for i := range 12 {
		rec[0] = byte(i + 1)
		_, err := e.AddRecord(rec)
		require.NoError(t, err)
		e.Set(Key{pid(byte(i)), "g"}, lease.State{Committed: uint64(i + 1)})
		require.NoError(t, e.Wait())
		want := dumpOf(e)
		crash := filepath.Join(t.TempDir(), "crash")
		crashCopy(t, e, crash)
		sizes = append(sizes, fileSize(t, path))

		c, rep, err := Open(crash, Options{})
		require.NoError(t, err)
		assert.Equalf(t, want, dumpOf(c), "after checkpoint %d", i+1)
		assert.Equal(t, i+1, rep.Checkpoints)
		assert.Zero(t, rep.TornBytes)
		require.NoError(t, c.Close())
	}
	for _, s := range sizes {
		assert.Zero(t, s%minPrealloc, "the file grows in whole extensions of PreallocBytes: %d", s)
	}
	assert.Greater(t, sizes[len(sizes)-1], sizes[0], "the journal was extended while in use")
}

func TestValidCheckpointAfterZerosIsCorruption(t *testing.T) {
	full, _, boundary, _ := preallocated(t)
	d := t.TempDir()
	b := append([]byte(nil), full...)
	clear(b[:boundary]) // the first checkpoint lost, the second intact
	path := filepath.Join(d, journalName(1))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, _, err := Open(d, Options{})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce, "doc.go: a valid checkpoint after the end of the journal means the middle was lost")
	assert.Equal(t, int64(0), ce.StartByte)
	assert.Equal(t, int64(len(b)), fileSize(t, path), "nothing truncated")
}

func TestGarbageAfterZerosInAnOlderJournalIsCorruption(t *testing.T) {
	full, _, _, end := preallocated(t)
	d := t.TempDir()
	b := append([]byte(nil), full...)
	b[end+100] = 0x5a
	require.NoError(t, os.WriteFile(filepath.Join(d, journalName(1)), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(d, journalName(3)), nil, 0o644))
	_, _, err := Open(d, Options{})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce, "doc.go: nothing is written to a journal after rotation, so it cannot have a torn tail")
	assert.Equal(t, end, ce.StartByte)
	assert.Equal(t, end+101, ce.EndByte)
}

func TestSnapshotThresholdCountsCheckpointsNotPreallocation(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: 1 << 40, SnapshotAfterBytes: 4096})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	require.Greater(t, fileSize(t, filepath.Join(dir, journalName(1))), int64(4096))
	files := listDir(t, dir)
	assert.Empty(t, files.snapshots, "a 4 KiB threshold is not passed by 64 KiB of preallocated zeros")
	assert.Equal(t, []string{journalName(1)}, journalFiles(t, dir))
}

func TestPreallocationCanBeTurnedOff(t *testing.T) {
	dir := t.TempDir()
	e, _ := openT(t, dir, Options{CheckpointInterval: 1 << 40, PreallocBytes: -1})
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	require.NoError(t, e.Close())
	path := filepath.Join(dir, journalName(1))
	assert.Equal(t, journalEnd(t, path), fileSize(t, path), "PreallocBytes < 0: the file ends at its last checkpoint")
}
