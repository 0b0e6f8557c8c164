package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// fullDiskEnv is an env whose disk can be filled: the commit log's files are
// at their largest size from the start (CommitLogFileBytes = the initial
// size), so once no new file can be made (fill) and the one in use is full,
// every append fails with commitlog.ErrNoSpace (wrapping ENOSPC), as on a
// disk that filled up.
type fullDiskEnv struct {
	*env
	f    *errorfs.FS
	stop func()
}

func newFullDiskEnv(t *testing.T) *fullDiskEnv {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
	f := errorfs.New(vfs.OS)
	b, err := Open(Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(), WakeTick: time.Millisecond,
		CheckpointInterval: time.Hour, FS: f, CommitLogFileBytes: 64 << 10})
	require.NoError(t, err)
	e.b = b
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return &fullDiskEnv{env: e, f: f}
}

// fill makes the disk full: no commit-log file can be made any more, and the
// room left (the file in use and a spare made before) is taken by filler
// entries (a kind recovery ignores).
func (e *fullDiskEnv) fill() {
	e.stop = e.f.Inject(errorfs.Fault{Op: errorfs.OpOpen, Under: "commitlog/spare-", Err: unix.ENOSPC})
	size := 4 << 10
	for i := 0; size > 0; i++ {
		require.Less(e.t, i, 10000, "the commit log never ran out of room")
		t, err := e.b.wal.Append(walFiller, make([]byte, size))
		if err != nil {
			require.ErrorIs(e.t, err, unix.ENOSPC)
			size /= 2 // what is left may still hold a smaller entry
			continue
		}
		require.NoError(e.t, t.Wait())
	}
}

// free ends the full disk: the commit log makes a new file again (its
// preparer retries every second; appenders make one themselves at once).
func (e *fullDiskEnv) free() { e.stop() }

// walFiller is a commit-log entry kind recovery skips (tests only).
const walFiller byte = 250

// issue 10: pops and acks on a full disk answer errors and claim nothing; once
// space is back every group is served at once (no phantom lease), a new group
// gets every message, and the broker reports degraded, then healthy.
func TestFullDiskPopsAndAcksClaimNothing(t *testing.T) {
	e := newFullDiskEnv(t)
	var want []string
	for p := range 4 {
		for i := range 5 {
			want = append(want, fmt.Sprintf("p%d-%d", p, i))
		}
		e.push("q", fmt.Sprintf("p%d", p), want[len(want)-5:]...)
	}
	const groups = 6
	// g0 holds a lease from before the disk filled: its ack fails below.
	held := e.pop(PopRequest{Queue: "q", Group: "g0", Batch: 5})
	require.Len(t, held.Messages, 5)
	heldKey := cursor.Key{Partition: e.b.lookupPartitionByID(mustID(t, held.Messages[0].PartitionID)).id, Group: "g0"}
	before, _ := e.b.cur.Get(heldKey)

	e.fill()
	for round := range 3 {
		for g := range groups {
			res, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", g), Batch: 3})
			require.Errorf(t, err, "round %d group %d: a pop that cannot be made durable is an error", round, g)
			assert.ErrorIs(t, err, unix.ENOSPC)
			assert.Empty(t, res.Messages)
		}
	}
	_, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Group: "auto", Batch: 3, AutoAck: true})
	require.ErrorIs(t, err, unix.ENOSPC, "an autoAck pop too")
	_, err = e.b.Ack("g0", []AckItem{{TransactionID: held.Messages[0].TransactionID, PartitionID: held.Messages[0].PartitionID, LeaseID: held.LeaseID, Status: "completed"}})
	require.ErrorIs(t, err, unix.ENOSPC)
	after, _ := e.b.cur.Get(heldKey)
	assert.Equal(t, before, after, "the failed ack was undone: the lease and cursor are as before")
	ext := e.b.ExtendLease(held.LeaseID, 120)
	require.ErrorIs(t, ext.Err, unix.ENOSPC, "an extension that cannot be made durable is an error")
	after, _ = e.b.cur.Get(heldKey)
	assert.Equal(t, before, after, "the failed extension was undone")
	_, err = e.b.Seek("g1", "q", true, 0)
	require.ErrorIs(t, err, unix.ENOSPC)

	f, failing := e.b.CheckpointFailure()
	require.True(t, failing, "issue 10: /health reports the state")
	assert.False(t, f.Sticky)
	assert.Contains(t, f.Reason, "no space left on device")
	assert.True(t, e.b.Healthy(), "a full disk is degraded, not unhealthy")

	e.free()
	for g := 1; g < groups; g++ {
		res := e.pop(PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", g), Batch: 20, Partitions: 4})
		assert.Lenf(t, res.Messages, 20, "group g%d is served every message at once: no claim survived a failed pop", g)
	}
	res := e.pop(PopRequest{Queue: "q", Group: "auto", Batch: 20, Partitions: 4, AutoAck: true})
	assert.Len(t, res.Messages, 20, "the failed autoAck pop committed nothing")
	_, failing = e.b.CheckpointFailure()
	assert.False(t, failing, "healthy again after the first good checkpoint")
	acked := e.ack("g0", held, "completed")
	require.True(t, acked[0].Success, "the lease from before the disk filled still works")

	e.reopen()
	fresh := e.pop(PopRequest{Queue: "q", Group: "new", Batch: 20, Partitions: 4})
	assert.ElementsMatch(t, want, txids(fresh), "a new group after a restart gets every message")
	for g := 1; g < groups; g++ {
		st, _ := e.b.cur.Get(cursorKey(e.env, "q", "p0", fmt.Sprintf("g%d", g)))
		assert.NotEqual(t, [16]byte{}, st.Lease.ID, "the leases of the answered pops survived the restart")
	}
}

// issue 10: a transaction whose commit point cannot be made durable is not
// applied, now or at the next start (its redo record is dropped).
func TestFullDiskTransactionIsNotApplied(t *testing.T) {
	e := newFullDiskEnv(t)
	e.push("q", "p", "m1")
	e.fill()
	res, err := e.b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", Partition: "p", TransactionID: "tx-push", Payload: []byte(`1`)}}})
	require.ErrorIs(t, err, unix.ENOSPC)
	assert.False(t, res.Success)
	e.free()
	e.reopen()
	got := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 10})
	assert.Equal(t, []string{"m1"}, txids(got), "nothing of the failed transaction was applied")
}

func mustID(t *testing.T, s string) [16]byte {
	t.Helper()
	id, ok := parseID(s)
	require.True(t, ok)
	return id
}
