package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// walkScenario drives one broker through creation, configure, pushes to new
// and existing partitions, a pop and its ack, a failed ack into the DLQ, a
// transaction and a clean close, on fsys. It records what was acknowledged:
// every push item that came back queued (or duplicate) and every ack that
// succeeded. A failed call is not an error of the scenario: that is what the
// walk injects. Open failing ends it early.
type walkAcked struct {
	pushed map[string]bool // transactionIds acknowledged as stored
	acked  map[string]bool // transactionIds whose completed ack was acknowledged (group g)
}

var closeErr error

func walkScenario(fsys vfs.FS) (walkAcked, error) {
	a := walkAcked{pushed: map[string]bool{}, acked: map[string]bool{}}
	b, err := Open(Config{DataDir: "/data", FS: fsys, Sync: "always", Logger: zerolog.Nop(),
		CheckpointInterval: time.Hour, MaintenanceInterval: -1, MaxOpenFiles: -1})
	if err != nil {
		return a, err
	}
	defer func() { closeErr = b.Close() }()
	push := func(part string, ids ...string) {
		items := make([]PushItem, len(ids))
		for i, id := range ids {
			items[i] = PushItem{Queue: "q", Partition: part, TransactionID: id, Payload: []byte(`{"id":"` + id + `"}`)}
		}
		res, err := b.Push(items)
		if err != nil {
			return
		}
		for _, r := range res {
			if r.Status == PushQueued || r.Status == PushDuplicate {
				a.pushed[r.TransactionID] = true
			}
		}
	}
	opts := DefaultQueueOptions()
	opts.RetryLimit = 0
	_, _ = b.Configure(ConfigureRequest{Queue: "q", Options: opts})
	push("p1", "a1", "a2", "a3")
	push("p2", "b1", "b2")
	push("p1", "a4")
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 2})
	if err == nil && len(res.Messages) > 0 {
		items := make([]AckItem, len(res.Messages))
		for i, m := range res.Messages {
			items[i] = AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: "completed"}
		}
		if out, err := b.Ack("g", items); err == nil {
			for _, r := range out {
				if r.Success {
					a.acked[r.TransactionID] = true
				}
			}
		}
		res.Release()
	}
	if res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "p2", Group: "g", Batch: 1}); err == nil && len(res.Messages) == 1 {
		m := res.Messages[0]
		_, _ = b.Ack("g", []AckItem{{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Status: "failed", Error: "boom"}})
		res.Release()
	}
	if tx, err := b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", Partition: "p3", TransactionID: "c1", Payload: []byte(`1`)}}}); err == nil && tx.Success {
		a.pushed["c1"] = true
	}
	return a, nil
}

// TestFaultWalk injects ENOSPC and EIO at every write and sync boundary of
// the scenario (each n-th call of each kind through the seam: segment logs,
// indexes, dedup, the cursor journal, the metadata journal, descriptors and
// the small files), then crashes the machine and restarts the broker with no
// fault. The promises (issue 10): the restart never refuses (a failed call
// leaves nothing a reopen reads as damage), every push acknowledged as
// stored is served exactly once, and no acknowledged ack is delivered again
// to its group.
func TestFaultWalk(t *testing.T) {
	recMem := vfs.NewStrictMem("/data")
	rec := errorfs.New(recMem)
	rec.Record()
	clean, err := walkScenario(rec)
	require.NoError(t, err)
	require.Len(t, clean.pushed, 7, "the scenario without faults stores everything")
	require.Len(t, clean.acked, 2)
	checkAfterCrash(t, "no fault", recMem.Crash(true), clean)
	counts := map[errorfs.Op]int{}
	for _, c := range rec.Trace() {
		if c.Op != errorfs.OpRead {
			counts[c.Op]++
		}
	}
	var ops []errorfs.Op
	for op := range counts {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	runs := 0
	for _, op := range ops {
		for k := 0; k < counts[op]; k++ {
			for _, e := range []error{unix.ENOSPC, unix.EIO} {
				name := fmt.Sprintf("%s#%d/%v", op, k, e)
				m := vfs.NewStrictMem("/data")
				fy := errorfs.New(m)
				fy.Inject(errorfs.Fault{Op: op, Skip: k, Count: 1, Err: e, Short: op == errorfs.OpWrite})
				acked, _ := walkScenario(fy)
				checkAfterCrash(t, name, m.Crash(true), acked)
				runs++
			}
		}
	}
	t.Logf("%d runs over %d boundaries", runs, runs/2)
}

// checkAfterCrash reopens the crashed file system and checks the promises.
func checkAfterCrash(t *testing.T, name string, fsys vfs.FS, acked walkAcked) {
	t.Helper()
	b, err := Open(Config{DataDir: "/data", FS: fsys, Sync: "always", Logger: zerolog.Nop(),
		CheckpointInterval: time.Hour, MaintenanceInterval: -1, MaxOpenFiles: -1})
	require.NoError(t, err, "%s: the restart refused", name)
	defer b.Close()
	seen := map[string]int{}
	for _, part := range []string{"p1", "p2", "p3"} {
		res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Partition: part, Group: "check", Batch: 100, AutoAck: true})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		require.NoError(t, err, "%s", name)
		for _, m := range res.Messages {
			seen[m.TransactionID]++
		}
		res.Release()
	}
	for id := range acked.pushed {
		require.Equal(t, 1, seen[id], "%s: acknowledged push %s served once", name, id)
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "%s: %s stored once", name, id)
	}
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "p1", Group: "g", Batch: 100})
	if err == nil {
		for _, m := range res.Messages {
			require.False(t, acked.acked[m.TransactionID], "%s: %s was acked by g and is delivered again", name, m.TransactionID)
		}
		res.Release()
	}
}
