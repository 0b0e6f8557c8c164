package fsck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/vfs"
)

// memData is where a memBroker keeps its data directory inside its vfs.Mem.
const memData = "/data"

// memBroker is the real broker on an in-memory file system (vfs.NewStrictMem),
// so a test can take the directory as a crash leaves it: killed (kill -9: every
// write the process made, synced or not) or after a power loss (only what was
// synced, names only where their directory was synced).
type memBroker struct {
	t     *testing.T
	mem   *vfs.Mem
	b     *broker.Broker
	clock time.Time
	// parts[name] = partition id; pushed[name] = transactionIds in push order.
	parts  map[string][16]byte
	pushed map[string][]string
}

// newMemBroker opens a broker with sync always and no background flush pass
// (the commit log keeps everything until Close), on a fresh directory.
func newMemBroker(t *testing.T) *memBroker {
	t.Helper()
	m := &memBroker{t: t, mem: vfs.NewStrictMem(memData), clock: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC),
		parts: map[string][16]byte{}, pushed: map[string][]string{}}
	m.open()
	t.Cleanup(func() {
		if m.b != nil {
			_ = m.b.Close()
		}
	})
	return m
}

func (m *memBroker) open() {
	m.t.Helper()
	b, err := broker.Open(broker.Config{DataDir: memData, FS: m.mem, Sync: "always", Logger: zerolog.Nop(),
		Now: func() time.Time { return m.clock }, FlushInterval: time.Hour, MaintenanceInterval: -1, MaxSegmentFileSize: 4096})
	require.NoError(m.t, err)
	m.b = b
}

// restart closes the broker cleanly (a flush pass, the clean marker) and opens
// it again (which renames the marker to the summary checkpoint).
func (m *memBroker) restart() {
	m.t.Helper()
	require.NoError(m.t, m.b.Close())
	m.open()
}

// push pushes n messages to queue q partition part in pushes of batch items
// (one segment each), the clock ticking 1 ms per push.
func (m *memBroker) push(q, part string, n, batch int) {
	m.t.Helper()
	for i := 0; i < n; i += batch {
		var items []broker.PushItem
		for j := i; j < min(n, i+batch); j++ {
			tx := fmt.Sprintf("%s-%s-%04d", q, part, len(m.pushed[part])+j-i)
			items = append(items, broker.PushItem{Queue: q, Partition: part, TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))})
		}
		res, err := m.b.Push(items)
		require.NoError(m.t, err)
		for k, r := range res {
			require.Equal(m.t, broker.PushQueued, r.Status)
			m.parts[part] = uuid.MustParse(r.PartitionID)
			m.pushed[part] = append(m.pushed[part], items[k].TransactionID)
		}
		m.clock = m.clock.Add(time.Millisecond)
	}
}

// consume pops up to n messages of queue q in group g and acks them.
func (m *memBroker) consume(q, g string, n int) int {
	m.t.Helper()
	res, err := m.b.Pop(context.Background(), broker.PopRequest{Queue: q, Group: g, Batch: n, Partitions: 10, SubscriptionMode: "all"})
	require.NoError(m.t, err)
	var items []broker.AckItem
	for _, msg := range res.Messages {
		items = append(items, broker.AckItem{TransactionID: msg.TransactionID, PartitionID: msg.PartitionID, LeaseID: res.LeaseID, Status: "completed"})
	}
	res.Release()
	if len(items) > 0 {
		out, err := m.b.Ack(g, items)
		require.NoError(m.t, err)
		for _, a := range out {
			require.Truef(m.t, a.Success, "ack %+v", a)
		}
	}
	return len(items)
}

// killed copies the directory as a kill -9 now leaves it (the page cache
// survives: every write made, synced or not) to a new directory on disk.
func (m *memBroker) killed() string {
	m.t.Helper()
	return memToDisk(m.t, m.mem)
}

// powerLost copies the directory as a power loss now leaves it (what was
// synced, vfs.Mem.Crash) to a new directory on disk.
func (m *memBroker) powerLost() string {
	m.t.Helper()
	return memToDisk(m.t, m.mem.Crash(false))
}

// memToDisk copies every file under memData in mem to a new temporary
// directory and returns it.
func memToDisk(t *testing.T, mem *vfs.Mem) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "data")
	var walk func(from, to string)
	walk = func(from, to string) {
		require.NoError(t, os.MkdirAll(to, 0o755))
		names, err := mem.List(from)
		require.NoError(t, err)
		for _, n := range names {
			src, dst := filepath.Join(from, n), filepath.Join(to, n)
			if _, err := mem.List(src); err == nil {
				walk(src, dst)
				continue
			}
			require.NoError(t, os.WriteFile(dst, mem.Bytes(src), 0o644))
		}
	}
	walk(memData, root)
	return root
}

// partDir is a partition's directory under a data directory on disk.
func partDir(root string, id [16]byte) string {
	return filepath.Join(root, dirPartitions, datadir.IDString(id))
}

// findingsOf returns the findings of kind k.
func findingsOf(r *Report, k Kind) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}

func runOn(t *testing.T, root string, mode Mode) *Report {
	t.Helper()
	rep, err := Run(root, Options{Mode: mode})
	require.NoError(t, err)
	return rep
}
