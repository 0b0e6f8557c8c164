package datadirtest

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
	"github.com/combmq/comb/vfs"
)

// MemData is where a MemBroker keeps its data directory inside its vfs.Mem.
const MemData = "/data"

// MemBroker is the real broker on an in-memory file system (vfs.NewStrictMem),
// so a test can take the directory as a crash leaves it: killed (kill -9: every
// write the process made, synced or not) or after a power loss (only what was
// synced, names only where their directory was synced).
type MemBroker struct {
	T     *testing.T
	Mem   *vfs.Mem
	B     *broker.Broker // nil after a test closed it without Open
	Clock time.Time      // the broker's clock, 1 ms further after each push
	// Parts[name] = partition id; Pushed[name] = transactionIds in push order.
	Parts  map[string][16]byte
	Pushed map[string][]string
}

// NewMemBroker opens a broker with sync always and no background flush pass
// (the commit log keeps everything until Close), on a fresh directory.
func NewMemBroker(t *testing.T) *MemBroker {
	t.Helper()
	m := &MemBroker{T: t, Mem: vfs.NewStrictMem(MemData), Clock: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC),
		Parts: map[string][16]byte{}, Pushed: map[string][]string{}}
	m.Open()
	t.Cleanup(func() {
		if m.B != nil {
			_ = m.B.Close()
		}
	})
	return m
}

func (m *MemBroker) Open() {
	m.T.Helper()
	b, err := broker.Open(broker.Config{DataDir: MemData, FS: m.Mem, Sync: "always", Logger: zerolog.Nop(),
		Now: func() time.Time { return m.Clock }, FlushInterval: time.Hour, MaintenanceInterval: -1, MaxSegmentFileSize: 4096})
	require.NoError(m.T, err)
	m.B = b
}

// Restart closes the broker cleanly (a flush pass, the clean marker) and opens
// it again (which renames the marker to the summary checkpoint).
func (m *MemBroker) Restart() {
	m.T.Helper()
	require.NoError(m.T, m.B.Close())
	m.Open()
}

// Push pushes n messages to queue q partition part in pushes of batch items
// (one segment each), the clock ticking 1 ms per push.
func (m *MemBroker) Push(q, part string, n, batch int) {
	m.T.Helper()
	for i := 0; i < n; i += batch {
		var items []broker.PushItem
		for j := i; j < min(n, i+batch); j++ {
			tx := fmt.Sprintf("%s-%s-%04d", q, part, len(m.Pushed[part])+j-i)
			items = append(items, broker.PushItem{Queue: q, Partition: part, TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))})
		}
		res, err := m.B.Push(items)
		require.NoError(m.T, err)
		for k, r := range res {
			require.Equal(m.T, broker.PushQueued, r.Status)
			m.Parts[part] = uuid.MustParse(r.PartitionID)
			m.Pushed[part] = append(m.Pushed[part], items[k].TransactionID)
		}
		m.Clock = m.Clock.Add(time.Millisecond)
	}
}

// Consume pops up to n messages of queue q in group g and acks them.
func (m *MemBroker) Consume(q, g string, n int) int {
	m.T.Helper()
	res, err := m.B.Pop(context.Background(), broker.PopRequest{Queue: q, Group: g, Batch: n, Partitions: 10, SubscriptionMode: "all"})
	require.NoError(m.T, err)
	var items []broker.AckItem
	for _, msg := range res.Messages {
		items = append(items, broker.AckItem{TransactionID: msg.TransactionID, PartitionID: msg.PartitionID, LeaseID: res.LeaseID, Status: "completed"})
	}
	res.Release()
	if len(items) > 0 {
		out, err := m.B.Ack(g, items)
		require.NoError(m.T, err)
		for _, a := range out {
			require.Truef(m.T, a.Success, "ack %+v", a)
		}
	}
	return len(items)
}

// Killed copies the directory as a kill -9 now leaves it (the page cache
// survives: every write made, synced or not) to a new directory on disk.
func (m *MemBroker) Killed() string {
	m.T.Helper()
	return MemToDisk(m.T, m.Mem)
}

// PowerLost copies the directory as a power loss now leaves it (what was
// synced, vfs.Mem.Crash) to a new directory on disk.
func (m *MemBroker) PowerLost() string {
	m.T.Helper()
	return MemToDisk(m.T, m.Mem.Crash(false))
}

// MemToDisk copies every file under MemData in mem to a new temporary
// directory and returns it.
func MemToDisk(t *testing.T, mem *vfs.Mem) string {
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
	walk(MemData, root)
	return root
}
