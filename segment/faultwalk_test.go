package segment

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// walkDir is the log directory of the fault walk.
const walkDir = "/d/p"

// walkRun is what one run of the walk scenario acknowledged.
type walkRun struct {
	acked     map[string]uint64 // transaction id → offset, for every batch whose Flush returned nil
	payload   map[string]string
	sticky    error  // the sticky failure the log reported, if any
	retention uint64 // offsets below this may be gone (DeleteFilesBefore asked for it)
	errs      int    // calls that returned an error
}

// walkScenario drives a log the way the broker does: each batch of two messages is
// looked up in the dedup index (a retried push must not be stored twice), appended,
// marked and flushed (the broker's flush pass) and, when every step returned nil, acknowledged; a
// failed batch is retried once. Along the way the dedup index is loaded, files rotate
// (small MaxFileBytes), the handles are released and reloaded, and retention deletes
// the oldest file. It ends without Close: the caller crashes the file system.
func walkScenario(t *testing.T, fs vfs.FS) *walkRun {
	t.Helper()
	run := &walkRun{acked: map[string]uint64{}, payload: map[string]string{}}
	l, _, err := openLog(fs, walkDir, Options{MaxFileBytes: 700})
	if err != nil {
		run.errs++
		return run
	}
	c := NewCommitter()
	defer func() { _ = c.Close() }()
	attempt := func(b int) error {
		recs := make([]Record, 2)
		ids := make([]string, 2)
		for j := range recs {
			ids[j] = fmt.Sprintf("b%d-%d", b, j)
			recs[j] = Record{TransactionID: ids[j], Payload: []byte(fmt.Sprintf(`{"batch":%d,"pad":"%060d"}`, b, j))}
		}
		found := map[int]uint64{}
		if err := l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) { found[i] = off }); err != nil {
			return err
		}
		if len(found) == 0 {
			first, err := l.Append(int64(1000*b), recs)
			if err != nil {
				return err
			}
			found[0], found[1] = first, first+1
		}
		c.Mark(l)
		if err := c.Flush(); err != nil {
			return err
		}
		for j, id := range ids {
			run.acked[id] = found[j]
			run.payload[id] = string(recs[j].Payload)
		}
		return nil
	}
	for b := 0; b < 14; b++ {
		for try := 0; try < 2; try++ {
			err := attempt(b)
			if err == nil {
				break
			}
			run.errs++
			if errors.Is(err, ErrSyncFailed) || errors.Is(err, ErrWriteFailed) {
				if run.sticky != nil {
					require.Equal(t, errors.Is(run.sticky, ErrSyncFailed), errors.Is(err, ErrSyncFailed), "one sticky failure, reported again: %v then %v", run.sticky, err)
				}
				run.sticky = err
			} else {
				require.Nil(t, run.sticky, "after a sticky failure every write reports it, got %v", err)
			}
		}
		switch b {
		case 6:
			l.Release() // flushes the dedup file, closes every handle; the next batch reloads
		case 9:
			run.retention = 10 // the oldest file (offsets 1-6) goes
			if _, _, err := l.DeleteFilesBefore(run.retention); err != nil {
				run.errs++
			}
		}
	}
	return run
}

// Issue 10: the segment log on the error-injecting twin. A clean run of the scenario
// is recorded; then every call through the seam that changes the disk is failed in
// turn, once with ENOSPC (a short write for writes: half the bytes land), once with
// EIO, and after the run the crash twin loses everything not synced. The promises:
// a batch whose Append and Flush returned nil survives the crash, exactly once, at
// the offset it was given, and its transaction id is found again; a failed call
// leaves the log usable or sticky-failed, never appending after garbage (reopening
// must not find damage with whole segments after it); reopening recovers everything.
func TestFaultWalkKeepsEveryPromise(t *testing.T) {
	newFS := func() (*vfs.Mem, *errorfs.FS) {
		mem := vfs.NewStrictMem("/")
		return mem, errorfs.New(mem)
	}
	_, rec := newFS()
	rec.Record()
	clean := walkScenario(t, rec)
	require.Zero(t, clean.errs)
	require.Len(t, clean.acked, 28)
	trace := rec.Trace()
	ops := map[errorfs.Op]int{}
	for _, c := range trace {
		ops[c.Op]++
	}
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync, errorfs.OpSyncDir, errorfs.OpTruncate, errorfs.OpMap, errorfs.OpOpen, errorfs.OpRemove, errorfs.OpMkdir} {
		require.NotZerof(t, ops[op], "the scenario crosses %s boundaries", op)
	}

	runs := 0
	for i, call := range trace {
		if call.Op == errorfs.OpRead {
			continue
		}
		for _, errno := range []error{unix.ENOSPC, unix.EIO} {
			runs++
			mem, fs := newFS()
			ft := errorfs.FaultAt(trace, i, errno)
			ft.Short = errno == unix.ENOSPC
			fs.Inject(ft)
			run := walkScenario(t, fs)
			msg := fmt.Sprintf("%v at call %d (%s %s)", errno, i, call.Op, call.Path)
			if call.Op == errorfs.OpSync && strings.HasSuffix(call.Path, ".seg") || call.Op == errorfs.OpSyncDir && call.Path == walkDir {
				// The kernel may have dropped the pages of a failed fdatasync and
				// let the next one succeed: no later sync may claim durability.
				require.ErrorIs(t, run.sticky, ErrSyncFailed, "%s: a failed sync of the log is sticky", msg)
			}
			checkAfterCrash(t, mem.Crash(i%2 == 0), run, msg)
		}
	}
	t.Logf("%d boundaries, %d runs", len(trace), runs)
}

// checkAfterCrash reopens the crashed twin and checks the walk's promises.
func checkAfterCrash(t *testing.T, crashed *vfs.Mem, run *walkRun, msg string) {
	t.Helper()
	l, _, err := openLog(crashed, walkDir, Options{MaxFileBytes: 700})
	if len(run.acked) == 0 && err != nil {
		return // nothing was promised, not even the directory
	}
	require.NoError(t, err, "%s: reopening after the crash", msg)
	defer l.Close()
	var damage []*CorruptionError
	_, err = verifyFS(crashed, walkDir, func(ce *CorruptionError) { damage = append(damage, ce) })
	require.NoError(t, err, msg)
	require.Empty(t, damage, "%s: no damage is left after recovery", msg)

	seen := map[string]uint64{}
	for _, m := range readAll(t, l, 1) {
		_, dup := seen[m.TransactionID]
		require.Falsef(t, dup, "%s: %s stored twice (offsets %d and %d)", msg, m.TransactionID, seen[m.TransactionID], m.Offset)
		seen[m.TransactionID] = m.Offset
		if p, ok := run.payload[m.TransactionID]; ok {
			require.Equal(t, p, string(m.Payload), msg)
		}
	}
	first := l.FirstOffset()
	var ids []string
	for id, off := range run.acked {
		if off < first {
			require.Lessf(t, off, run.retention, "%s: %s at %d is gone but retention did not ask for it", msg, id, off)
			continue
		}
		got, ok := seen[id]
		require.Truef(t, ok, "%s: acknowledged %s at %d lost", msg, id, off)
		require.Equal(t, off, got, "%s: %s moved", msg, id)
		ids = append(ids, id)
	}
	found := map[string]uint64{}
	require.NoError(t, l.FindTransactions(ids, func(i int, off uint64, _ [16]byte) { found[ids[i]] = off }), msg)
	for _, id := range ids {
		require.Equalf(t, run.acked[id], found[id], "%s: dedup finds %s", msg, id)
	}
}
