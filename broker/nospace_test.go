package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// nsEnv is a broker on the crash-simulating Mem twin (strict: only durable
// names survive a crash) behind a fault injector, whose disk can be filled
// two ways: the whole file system (SetCapacity: every write past what is
// used fails with ENOSPC) or the commit log alone (no new commit-log file
// can be made and the one in use is filled).
type nsEnv struct {
	t    *testing.T
	mem  *vfs.Mem
	f    *errorfs.FS
	clk  *testClock
	b    *Broker
	stop func()
}

func newNSEnv(t *testing.T) *nsEnv {
	n := &nsEnv{t: t, mem: vfs.NewStrictMem("/data"), clk: newTestClock()}
	n.open()
	t.Cleanup(func() {
		if n.b != nil {
			n.b.Close()
		}
	})
	return n
}

func (n *nsEnv) open() {
	n.t.Helper()
	n.f = errorfs.New(n.mem)
	b, err := Open(Config{DataDir: "/data", FS: n.f, Sync: "always", Now: n.clk.Now, Logger: zerolog.Nop(),
		WakeTick: time.Millisecond, CheckpointInterval: time.Hour, FlushInterval: time.Hour,
		MaintenanceInterval: -1, CommitLogFileBytes: 64 << 10})
	require.NoError(n.t, err)
	n.b = b
}

// reopen closes the broker cleanly and opens the same files again.
func (n *nsEnv) reopen() {
	n.t.Helper()
	require.NoError(n.t, n.b.Close())
	n.b = nil
	n.open()
}

// crash stops the broker as kill -9 would and opens what a power loss
// would leave (only what was synced).
func (n *nsEnv) crash() {
	n.t.Helper()
	(&env{t: n.t, b: n.b}).crash()
	n.b = nil
	n.mem = n.mem.Crash(true)
	n.open()
}

// diskFull leaves no byte free; diskFree lifts the limit.
func (n *nsEnv) diskFull() { n.mem.SetCapacity(n.mem.Used()) }
func (n *nsEnv) diskFree() { n.mem.SetCapacity(0) }

// walFull fills the commit log: no new file can be made and the one in use
// is taken up by filler entries (a kind recovery skips).
//
// It waits for the preparer's spare first: a spare being made when the
// fault goes in (its file opened just before) would land after the filling
// and take the next push, so the commit log would not be full after all.
func (n *nsEnv) walFull() {
	require.Eventually(n.t, n.b.wal.(localLog).l.SpareReady, 10*time.Second, time.Millisecond, "the commit log's preparer never made a spare")
	n.stop = n.f.Inject(errorfs.Fault{Op: errorfs.OpOpen, Under: "commitlog/spare-", Err: unix.ENOSPC})
	size := 4 << 10
	for i := 0; size > 0; i++ {
		require.Less(n.t, i, 10000, "the commit log never ran out of room")
		tk, err := n.b.wal.Append(walFiller, make([]byte, size))
		if err != nil {
			require.ErrorIs(n.t, err, unix.ENOSPC)
			size /= 2
			continue
		}
		require.NoError(n.t, tk.Wait())
	}
}

func (n *nsEnv) walFree() { n.stop() }

func (n *nsEnv) pushErr(queue, partition string, txids ...string) ([]PushResult, error) {
	items := make([]PushItem, len(txids))
	for i, tx := range txids {
		items[i] = PushItem{Queue: queue, Partition: partition, TransactionID: tx, Payload: []byte(`{"tx":"` + tx + `"}`)}
	}
	res, err := n.b.Push(items)
	n.clk.Advance(time.Millisecond)
	return res, err
}

// push pushes and requires every item answered queued.
func (n *nsEnv) push(queue, partition string, txids ...string) {
	n.t.Helper()
	res, err := n.pushErr(queue, partition, txids...)
	require.NoError(n.t, err)
	for _, r := range res {
		require.Equal(n.t, PushQueued, r.Status, r.TransactionID)
	}
}

// all pops every message of queue for a new group (autoAck) and returns
// their transaction ids, sorted.
func (n *nsEnv) all(queue, group string) []string {
	n.t.Helper()
	res, err := n.b.Pop(context.Background(), PopRequest{Queue: queue, Group: group, Batch: 1000, Partitions: 100, AutoAck: true})
	require.NoError(n.t, err)
	got := txids(res)
	sort.Strings(got)
	return got
}

// requireNoSpace checks the answer of a write the disk had no room for: the
// full-disk error (ENOSPC in its chain, its message naming what could not
// be written), nothing damaged, the state reported for /health.
func (n *nsEnv) requireNoSpace(err error, where string) {
	n.t.Helper()
	require.Error(n.t, err)
	require.ErrorIs(n.t, err, ErrNoSpace)
	require.True(n.t, errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT), "the I/O error stays in the chain: %v", err)
	assert.True(n.t, IsNoSpace(err))
	assert.Contains(n.t, err.Error(), "no space left on device: "+where+" could not be written")
	assert.Empty(n.t, n.b.Damaged(), "a full disk is not damage")
	st, full := n.b.NoSpace()
	assert.True(n.t, full, "/health reports the full disk")
	assert.Contains(n.t, st.Reason, where)
	assert.True(n.t, n.b.Healthy(), "degraded, not unhealthy")
}

// requireServing checks the state once space is back and a write succeeded.
func (n *nsEnv) requireServing() {
	n.t.Helper()
	assert.Empty(n.t, n.b.Damaged())
	_, full := n.b.NoSpace()
	assert.False(n.t, full, "the state ends with the first write that succeeds")
}

// issue 21 item 3: a new partition pushed while the disk is full answers
// ErrNoSpace, is not damaged, and takes the same push once space is freed,
// without a restart; everything is there exactly once after a reopen and
// after a crash.
func TestFullDiskNewPartitionServesOnceSpaceIsFreed(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "old", "a0")
	n.diskFull()
	_, err := n.pushErr("q", "new", "b0", "b1")
	n.requireNoSpace(err, "queue q partition new: its directory")
	_, err = n.pushErr("q", "new", "b0", "b1")
	n.requireNoSpace(err, "queue q partition new: its directory")
	assert.Equal(t, []string{"a0"}, n.all("q", "g0"), "nothing of the refused pushes is served")

	n.diskFree()
	n.push("q", "new", "b0", "b1") // queued, not duplicate: nothing was stored
	n.requireServing()
	n.push("q", "new", "b2")
	assert.Equal(t, []string{"a0", "b0", "b1", "b2"}, n.all("q", "g1"))

	n.reopen()
	assert.Equal(t, []string{"a0", "b0", "b1", "b2"}, n.all("q", "g2"))
	n.crash()
	assert.Equal(t, []string{"a0", "b0", "b1", "b2"}, n.all("q", "g3"))
	assert.Empty(t, n.b.Damaged())
}

// A partition whose directory was never made (the disk stayed full) and a
// clean restart: the partition is still there, and takes pushes.
func TestFullDiskNewPartitionAcrossARestart(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "old", "a0")
	n.diskFull()
	_, err := n.pushErr("q", "new", "b0")
	n.requireNoSpace(err, "queue q partition new: its directory")
	n.diskFree()
	n.reopen()
	n.push("q", "new", "b0")
	assert.Equal(t, []string{"a0", "b0"}, n.all("q", "g"))
	dir := filepath.Join("/data", meta.PartitionsDir, n.b.lookupQueue("q").partition("new").idStr)
	d, err := meta.ReadDescriptor(n.mem, dir)
	require.NoError(t, err, "the directory made after the restart has its DESCRIPTOR")
	assert.Equal(t, "new", d.Partition)
	n.crash()
	assert.Equal(t, []string{"a0", "b0"}, n.all("q", "g2"))
}

// An existing partition's segment file has no room: the write is cut back,
// the push answers ErrNoSpace, and the retry once space is freed is stored
// once (dedup finds nothing of the failed one).
func TestFullDiskExistingPartitionAppend(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0", "a1")
	n.diskFull()
	_, err := n.pushErr("q", "p", "a1", "a2", "a3")
	n.requireNoSpace(err, "queue q partition p: its segment file")
	n.diskFree()
	res, err := n.pushErr("q", "p", "a1", "a2", "a3")
	require.NoError(t, err)
	assert.Equal(t, []PushStatus{PushDuplicate, PushQueued, PushQueued}, []PushStatus{res[0].Status, res[1].Status, res[2].Status})
	n.requireServing()
	assert.Equal(t, []string{"a0", "a1", "a2", "a3"}, n.all("q", "g"))
	n.crash()
	assert.Equal(t, []string{"a0", "a1", "a2", "a3"}, n.all("q", "g2"))
}

// issue 21: a full commit log is a full disk, not damage. The segment the
// push wrote to its file is taken back (no record no entry covers), the
// partition keeps serving, and the retry once space is back stores each
// item once, at the offsets the failed push had.
func TestFullCommitLogTakesTheSegmentBack(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0")
	p := n.b.lookupQueue("q").partition("p")
	next := p.log.NextOffset()
	n.walFull()
	_, err := n.pushErr("q", "p", "a1", "a2")
	n.requireNoSpace(err, "the commit log")
	assert.Equal(t, next, p.log.NextOffset(), "the segment was taken back out of the file")
	_, err = n.pushErr("q", "new", "b0")
	n.requireNoSpace(err, "the commit log") // a new partition's records: nothing is created
	assert.Nil(t, n.b.lookupQueue("q").partition("new"))

	n.walFree()
	n.push("q", "p", "a1", "a2")
	n.push("q", "new", "b0")
	n.requireServing()
	assert.Equal(t, next+2, p.log.NextOffset(), "the retry took the offsets the failed push had")
	assert.Equal(t, []string{"a0", "a1", "a2", "b0"}, n.all("q", "g1"))
	n.crash()
	assert.Equal(t, []string{"a0", "a1", "a2", "b0"}, n.all("q", "g2"))
	n.reopen()
	assert.Equal(t, []string{"a0", "a1", "a2", "b0"}, n.all("q", "g3"))
}

// A crash right after the commit log refused a push (its segment taken back
// but the cut not synced): the restart keeps nothing of it, and the next
// push is stored once.
func TestFullCommitLogThenCrash(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0")
	n.walFull()
	_, err := n.pushErr("q", "p", "a1")
	n.requireNoSpace(err, "the commit log")
	n.walFree()
	n.crash()
	assert.Equal(t, []string{"a0"}, n.all("q", "g"))
	n.push("q", "p", "a1")
	assert.Equal(t, []string{"a0", "a1"}, n.all("q", "g2"))
	assert.Empty(t, n.b.Damaged())
}

// popOne pops one message of q for group g.
func (n *nsEnv) popOne(group string) PopResult {
	n.t.Helper()
	res, err := n.b.Pop(context.Background(), PopRequest{Queue: "q", Group: group, Batch: 1})
	require.NoError(n.t, err)
	require.Len(n.t, res.Messages, 1)
	return res
}

// deadLetter acks the popped message failed (retryLimit 0: it goes to the
// DLQ).
func (n *nsEnv) deadLetter(group string, res PopResult) error {
	m := res.Messages[0]
	_, err := n.b.Ack(group, []AckItem{{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: "failed", Error: "boom"}})
	return err
}

func (n *nsEnv) dlq() []string {
	n.t.Helper()
	entries, _, err := listDLQ(n.b, dlqFilter{Queue: "q", Limit: 100})
	require.NoError(n.t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.TransactionID)
	}
	sort.Strings(out)
	return out
}

// The DLQ: its directory, its segment file, its commit-log entry. Each
// refusal leaves no dead letter behind; the retried ack writes it once.
func TestFullDiskDeadLetters(t *testing.T) {
	for _, how := range []string{"directory", "segment file", "commit log"} {
		t.Run(how, func(t *testing.T) {
			n := newNSEnv(t)
			opts := DefaultQueueOptions()
			opts.RetryLimit = 0
			_, err := n.b.Configure(ConfigureRequest{Queue: "q", Options: opts})
			require.NoError(t, err)
			n.push("q", "p", "m0", "m1")
			if how != "directory" {
				require.NoError(t, n.deadLetter("g0", n.popOne("g0"))) // the DLQ exists
			}
			res := n.popOne("g")
			want := map[string]string{"directory": "queue q: its dead-letter directory", "segment file": "queue q: its dead-letter log", "commit log": "the commit log"}[how]
			if how == "commit log" {
				n.walFull()
			} else {
				n.diskFull()
			}
			err = n.deadLetter("g", res)
			require.Error(t, err)
			if how != "commit log" {
				n.requireNoSpace(err, want)
			} else {
				require.ErrorIs(t, err, unix.ENOSPC)
				assert.Empty(t, n.b.Damaged())
			}
			if how == "commit log" {
				n.walFree()
			} else {
				n.diskFree()
			}
			var wantDLQ []string
			if how != "directory" {
				wantDLQ = []string{"m0"}
			}
			assert.Equal(t, wantDLQ, n.dlq(), "the refused ack left no dead letter")
			// The refused ack changed nothing: the lease still holds, and
			// the retried ack dead-letters the message.
			require.NoError(t, n.deadLetter("g", res))
			got := n.dlq()
			assert.Len(t, got, len(wantDLQ)+1, "one dead letter more, written once: %v", got)
			n.crash()
			assert.Equal(t, got, n.dlq())
		})
	}
}

// notes/log (traces, deletions): a write the notes file has no room for
// answers ErrNoSpace and the same note is stored once space is freed.
func TestFullDiskNotes(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "m0", "m1")
	pid := n.b.lookupQueue("q").partition("p").idStr
	n.diskFull()
	_, err := n.b.AddTrace(TraceRequest{PartitionID: pid, TransactionID: "m0", Data: []byte(`{"x":1}`)})
	n.requireNoSpace(err, "the notes log")
	_, err = n.b.DeleteMessage(pid, "m1")
	n.requireNoSpace(err, "the notes log")
	tr, err := n.b.Traces(pid, "m0")
	require.NoError(t, err)
	assert.Empty(t, tr)
	n.diskFree()
	_, err = n.b.AddTrace(TraceRequest{PartitionID: pid, TransactionID: "m0", Data: []byte(`{"x":1}`)})
	require.NoError(t, err)
	found, err := n.b.DeleteMessage(pid, "m1")
	require.NoError(t, err)
	assert.True(t, found)
	n.requireServing()
	tr, err = n.b.Traces(pid, "m0")
	require.NoError(t, err)
	assert.Len(t, tr, 1)
	assert.Equal(t, []string{"m0"}, n.all("q", "g"))
	n.reopen()
	tr, err = n.b.Traces(pid, "m0")
	require.NoError(t, err)
	assert.Len(t, tr, 1)
	assert.Equal(t, []string{"m0"}, n.all("q", "g2"))
}

// Streams: a flush pass that cannot write a state snapshot fails and
// changes nothing; a cycle on a full commit log answers ErrNoSpace and
// applies nothing; both succeed once space is back, and the state is whole
// after a crash.
func TestFullDiskStreams(t *testing.T) {
	n := newNSEnv(t)
	n.push("src", "p", "m1", "m2")
	qid := register(t, n.b, "sq", "src", "sink", "h", false).QueryID
	res, err := n.b.Pop(context.Background(), PopRequest{Queue: "src", Group: "g", Batch: 2})
	require.NoError(t, err)
	cycle := func(key, val string) (StreamCycleResult, error) {
		return n.b.StreamCycle(StreamCycleRequest{QueryID: qid, PartitionID: res.PartitionID, Group: "g", ReleaseLease: false,
			StateOps: []StreamStateOp{upsertOp(key, val)},
			Push:     []PushItem{{Queue: "sink", TransactionID: "out-" + key + val, Payload: []byte(val)}}})
	}
	r, err := cycle("a", "1")
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)

	n.diskFull()
	err = n.b.flushPass()
	require.ErrorIs(t, err, unix.ENOSPC)
	assert.Empty(t, n.b.Damaged())
	n.diskFree()

	n.walFull()
	_, err = cycle("b", "2")
	require.ErrorIs(t, err, ErrNoSpace)
	assert.Empty(t, n.b.Damaged())
	n.walFree()
	assert.Equal(t, map[string]string{"a": "1"}, stateOf(t, n.b, qid, res.PartitionID), "the refused cycle applied nothing")

	r, err = cycle("b", "2")
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)
	require.NoError(t, n.b.flushPass())
	n.crash()
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, stateOf(t, n.b, qid, res.PartitionID))
	assert.Equal(t, []string{"out-a1", "out-b2"}, n.all("sink", "g9"))
}

// Many refused pushes in a row, to several partitions, then space: every
// item is stored exactly once (a stress of the take-back and the retries).
func TestFullDiskRepeatedRefusals(t *testing.T) {
	n := newNSEnv(t)
	var want []string
	for p := range 3 {
		n.push("q", fmt.Sprintf("p%d", p), fmt.Sprintf("x%d", p))
		want = append(want, fmt.Sprintf("x%d", p))
	}
	n.walFull()
	for round := range 5 {
		for p := range 4 { // p3 is new
			_, err := n.pushErr("q", fmt.Sprintf("p%d", p), fmt.Sprintf("r%d-%d", p, round))
			require.ErrorIs(t, err, ErrNoSpace)
		}
	}
	n.walFree()
	for round := range 5 {
		for p := range 4 {
			tx := fmt.Sprintf("r%d-%d", p, round)
			n.push("q", fmt.Sprintf("p%d", p), tx)
			want = append(want, tx)
		}
	}
	sort.Strings(want)
	assert.Equal(t, want, n.all("q", "g"))
	n.crash()
	assert.Equal(t, want, n.all("q", "g2"))
	assert.Empty(t, n.b.Damaged())
}

// A quota (EDQUOT) is a full disk too, and a write torn by it (half its
// bytes written, then the error) is cut back: the retry is stored once and
// the file reads back whole after a crash. A mkdir refused by the quota
// leaves the new partition without a directory until its next push.
func TestQuotaIsAFullDisk(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0")
	stop := n.f.Inject(errorfs.Fault{Op: errorfs.OpWrite, Under: ".seg", Err: unix.EDQUOT, Short: true})
	_, err := n.pushErr("q", "p", "a1", "a2")
	n.requireNoSpace(err, "queue q partition p: its segment file")
	require.ErrorIs(t, err, unix.EDQUOT)
	stop()
	stop = n.f.Inject(errorfs.Fault{Op: errorfs.OpMkdir, Under: "partitions/", Err: unix.EDQUOT})
	_, err = n.pushErr("q", "new", "b0")
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, err, unix.EDQUOT)
	assert.Empty(t, n.b.Damaged())
	stop()
	n.push("q", "p", "a1", "a2")
	n.push("q", "new", "b0")
	n.requireServing()
	assert.Equal(t, []string{"a0", "a1", "a2", "b0"}, n.all("q", "g"))
	n.crash()
	assert.Equal(t, []string{"a0", "a1", "a2", "b0"}, n.all("q", "g2"))
}

// A crash while a new partition waits for its directory: the restart makes
// it from the durable creation (with its DESCRIPTOR), and it takes pushes.
func TestFullDiskNewPartitionThenCrash(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "old", "a0")
	n.diskFull()
	_, err := n.pushErr("q", "new", "b0")
	n.requireNoSpace(err, "queue q partition new: its directory")
	n.crash() // the twin a crash leaves has no capacity limit: space is back
	n.push("q", "new", "b0")
	assert.Equal(t, []string{"a0", "b0"}, n.all("q", "g"))
	dir := filepath.Join("/data", meta.PartitionsDir, n.b.lookupQueue("q").partition("new").idStr)
	_, err = meta.ReadDescriptor(n.mem, dir)
	require.NoError(t, err)
	n.crash()
	assert.Equal(t, []string{"a0", "b0"}, n.all("q", "g2"))
	assert.Empty(t, n.b.Damaged())
}

// The full-disk state also ends when space is freed and nothing writes (a
// queue only popped from writes only to the preallocated commit log): a
// probe write, a second after the failure at the earliest, ends it, and one
// the disk refuses does not.
func TestFullDiskStateEndsWhenSpaceIsFreedWithoutAWrite(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0")
	n.diskFull()
	_, err := n.pushErr("q", "p", "b0")
	n.requireNoSpace(err, "queue q partition p: its segment file")
	n.clk.Advance(2 * noSpaceProbeEvery)
	_, full := n.b.NoSpace()
	assert.True(t, full, "the probe found the disk still full")
	n.diskFree()
	_, full = n.b.NoSpace()
	assert.True(t, full, "no second probe within noSpaceProbeEvery")
	n.clk.Advance(noSpaceProbeEvery)
	_, full = n.b.NoSpace()
	assert.False(t, full, "the probe wrote: the state ends without a push")
	_, err = n.mem.ReadFile("/data/" + SpaceProbeFile)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the probe file is removed")
	assert.Empty(t, n.b.Damaged())
}

// Issue 10: a stop on a full disk is not a failure. The last flush pass
// cannot write its snapshots, so no clean marker is written, but every
// acknowledged write is in the synced commit log: Close returns nil and the
// next start, not a clean one, recovers all of it from the log.
func TestCloseOnAFullDiskIsNotAFailure(t *testing.T) {
	n := newNSEnv(t)
	n.push("q", "p", "a0", "a1")
	n.diskFull()
	require.NoError(t, n.b.Close())
	n.b = nil
	n.diskFree()
	n.open()
	assert.False(t, n.b.cleanStart, "no clean marker: the pass that writes it found the disk full")
	assert.Equal(t, []string{"a0", "a1"}, n.all("q", "g"))
	assert.Empty(t, n.b.Damaged())
}
