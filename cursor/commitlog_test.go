package cursor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/vfs"
)

// commitLog adapts a *commitlog.Log to Log as the broker does: a checkpoint
// is an entry of kind kindCheckpoint, a full disk (ErrNoSpace) is retryable,
// anything else (ErrFailed, ErrClosed) sticky. (A test of the seam, not a
// dependency: package cursor itself never imports commitlog; both share
// package lsn's Ticket.)
type commitLog struct{ l *commitlog.Log }

const kindCheckpoint = 4 // the design's entry kinds: 1 meta, 2 push, 3 dlq, 4 checkpoint, 5 tx

func (c commitLog) AppendCheckpoint(body []byte) (lsn.Ticket, error) {
	return c.l.Append(kindCheckpoint, body)
}

func (commitLog) Retryable(err error) bool { return errors.Is(err, commitlog.ErrNoSpace) }

// openWithCommitLog recovers the engine the way the broker does: the commit
// log first, the engine's snapshot, the log's checkpoints from ReplayFrom,
// then Start.
func openWithCommitLog(t testing.TB, fsys vfs.FS, opts commitlog.Options) (*Engine, *commitlog.Log) {
	t.Helper()
	opts.FS = fsys
	l, _, err := commitlog.Open("/data/commitlog", opts)
	require.NoError(t, err)
	e, rep, err := Open("/data/cursor", Options{FS: fsys, Log: commitLog{l}, CheckpointInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, l.Read(commitlog.LSN(rep.ReplayFrom), func(en commitlog.Entry) error {
		if en.Kind != kindCheckpoint {
			return nil
		}
		return e.ApplyCheckpoint(en.Payload)
	}))
	e.Start()
	t.Cleanup(func() {
		_ = e.Close()
		_ = l.Close()
	})
	return e, l
}

// TestThroughTheCommitLog (issue 14): checkpoints in the real commit log,
// snapshots, truncation behind replayFrom, a power loss: every acknowledged
// state comes back.
func TestThroughTheCommitLog(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	opts := commitlog.Options{FileBytes: 4 << 10}
	e, l := openWithCommitLog(t, m, opts)
	acked := map[Key]lease.State{}
	for i := range 200 {
		k := Key{pid(byte(i % 50)), fmt.Sprint("g", i%3)}
		s := lease.State{Committed: uint64(i + 1)}
		e.Set(k, s)
		require.NoError(t, e.Wait())
		acked[k] = s
		if _, err := l.Append(2, make([]byte, 100)); err != nil { // a push between the checkpoints
			require.NoError(t, err)
		}
		if i%40 == 39 {
			from, err := e.Snapshot()
			require.NoError(t, err)
			require.NoError(t, l.TruncateBefore(commitlog.LSN(from)))
		}
	}
	require.Greater(t, uint64(l.FirstLSN()), uint64(1), "the log was truncated")
	e2, _ := openWithCommitLog(t, m.Crash(false), opts)
	mustHold(t, e2, acked, "after a power loss")
	assert.Equal(t, len(acked), e2.Len())
}

// TestCommitLogOutOfSpaceIsRetryable: the commit log refuses an append when
// no file can be prepared (ErrNoSpace): the checkpoint fails, not the engine,
// and goes through once space is back.
func TestCommitLogOutOfSpaceIsRetryable(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	opts := commitlog.Options{FileBytes: 4 << 10}
	e, l := openWithCommitLog(t, m, opts)
	big := make([]byte, 3<<10)
	e.Set(Key{pid(1), "g"}, lease.State{Committed: 1})
	require.NoError(t, e.Wait())
	// The preparer may still be writing the spare: a disk taken away
	// meanwhile still gets that file once the write lands, and the
	// checkpoint below rotates into it.
	require.Eventually(t, l.SpareReady, 10*time.Second, time.Millisecond, "the preparer never made a spare")
	m.SetCapacity(m.Used())
	var err error
	for range 10 { // use up the prepared files
		if _, err = l.Append(2, big); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, commitlog.ErrNoSpace)
	// A checkpoint bigger than what is left of the current file.
	e.Set(Key{pid(2), string(big[:1500])}, lease.State{Committed: 2})
	err = e.Wait()
	var ce *CheckpointError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, commitlog.ErrNoSpace)
	assert.False(t, ce.Sticky, "issue 10: a full disk is a state")
	m.SetCapacity(0)
	require.NoError(t, e.Wait(), "space is back")
	_, failing := e.Failure()
	assert.False(t, failing)
}
