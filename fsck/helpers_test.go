package fsck

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// testDir is a crafted data directory: partition logs written through segment.Log,
// cursors through cursor.Engine, exactly as the server writes them.
type testDir struct {
	t       testing.TB
	root    string
	queue   [16]byte // the queue every partition of the directory belongs to
	parts   int
	firstID uuid.UUID // the first partition written
}

func newTestDir(t testing.TB) *testDir {
	t.Helper()
	root := t.TempDir()
	for _, sub := range []string{dirMeta, dirCursor, dirPartitions} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, sub), 0o755))
	}
	d := &testDir{t: t, root: root, queue: uuid.Must(uuid.NewV7())}
	d.appendMeta(metaQueuePut, d.queue, metaQueueBody(ts0, "q"))
	return d
}

// Record kinds of the metadata journal (package meta), for
// crafting journals; TestMetaReaderMatchesBroker checks the real broker's.
const (
	metaQueuePut   = 1
	metaPartCreate = 2
)

// appendMeta appends one record to meta/journal in the journal's framing
// (package meta: a record frame around kind, id and the rest).
func (d *testDir) appendMeta(kind byte, id [16]byte, rest []byte) {
	d.t.Helper()
	body := append([]byte{kind}, id[:]...)
	body = append(body, rest...)
	frame, err := meta.JournalFormat.Append(nil, body)
	require.NoError(d.t, err)
	f, err := os.OpenFile(filepath.Join(d.root, dirMeta, metaJournalFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(d.t, err)
	_, err = f.Write(frame)
	require.NoError(d.t, err)
	require.NoError(d.t, f.Close())
}

func metaQueueBody(createdAt int64, name string) []byte {
	b := binary.AppendVarint(nil, createdAt)
	for _, s := range []string{name, "", ""} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, 0) // no integer options
	return binary.AppendUvarint(b, 0)
}

func metaPartitionBody(queue [16]byte, createdAt int64, name string) []byte {
	b := append([]byte(nil), queue[:]...)
	b = binary.AppendVarint(b, createdAt)
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

func (d *testDir) partitionDir(id uuid.UUID) string {
	return filepath.Join(d.root, dirPartitions, id.String())
}

// writeLog appends segments of perSeg records each to a new partition log, rotating
// files every fileBytes bytes, and returns the partition id. Timestamps start at
// tsMicros and grow by 1000 µs a segment.
func (d *testDir) writeLog(segments, perSeg int, fileBytes int64, tsMicros int64) uuid.UUID {
	d.t.Helper()
	id := uuid.Must(uuid.NewV7())
	d.appendMeta(metaPartCreate, id, metaPartitionBody(d.queue, tsMicros, fmt.Sprintf("p%d", d.parts)))
	if d.parts == 0 {
		d.firstID = id
	}
	d.parts++
	l, _, err := segment.Open(d.partitionDir(id), segment.Options{MaxFileBytes: fileBytes})
	require.NoError(d.t, err)
	// As the server does, the directory says what it is (package meta).
	require.NoError(d.t, meta.WriteDescriptor(vfs.OS, d.partitionDir(id), meta.Descriptor{Kind: meta.DescribesPartition,
		QueueID: d.queue, QueueCreatedAt: ts0, Queue: "q", PartitionID: id, PartitionCreated: tsMicros, Partition: fmt.Sprintf("p%d", d.parts-1)}, true))
	off := 1
	for s := 0; s < segments; s++ {
		recs := make([]segment.Record, perSeg)
		for i := range recs {
			recs[i] = segment.Record{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprintf("tx-%d", off),
				Payload: []byte(fmt.Sprintf(`{"n":%d,"pad":"abcdefghijklmnopqrstuvwxyz"}`, off))}
			off++
		}
		_, err := l.Append(tsMicros+int64(s)*1000, recs)
		require.NoError(d.t, err)
	}
	require.NoError(d.t, l.Sync())
	// Load the dedup index once so dedup.idx exists, as on a server that served pushes.
	_, _, _, err = l.FindTransaction("tx-1")
	require.NoError(d.t, err)
	require.NoError(d.t, l.Close())
	return id
}

// setCursor stores one (partition, group) state in the cursor snapshot (the
// commit log is not read by fsck yet: snapshotOnlyLog).
func (d *testDir) setCursor(id uuid.UUID, group string, s lease.State) {
	d.t.Helper()
	log := &snapshotOnlyLog{}
	e, rep, err := cursor.Open(filepath.Join(d.root, dirCursor), cursor.Options{Log: log})
	require.NoError(d.t, err)
	log.lsn = rep.ReplayFrom
	e.Start()
	e.Set(cursor.Key{Partition: id, Group: group}, s)
	_, err = e.Snapshot()
	require.NoError(d.t, err)
	require.NoError(d.t, e.Close())
}

// segFiles returns the segment file paths of a partition, oldest first.
func (d *testDir) segFiles(id uuid.UUID) []string {
	d.t.Helper()
	files, err := listSegFiles(d.partitionDir(id))
	require.NoError(d.t, err)
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(d.partitionDir(id), f.Name)
	}
	return out
}

func (d *testDir) appendBytes(path string, b []byte) {
	d.t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(d.t, err)
	_, err = f.Write(b)
	require.NoError(d.t, err)
	require.NoError(d.t, f.Close())
}

func (d *testDir) flipBit(path string, at int64) {
	d.t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(d.t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, at)
	require.NoError(d.t, err)
	b[0] ^= 0x10
	_, err = f.WriteAt(b, at)
	require.NoError(d.t, err)
	require.NoError(d.t, f.Close())
}

func (d *testDir) run(mode Mode) *Report {
	d.t.Helper()
	rep, err := Run(d.root, Options{Mode: mode})
	require.NoError(d.t, err)
	return rep
}

func kinds(r *Report) []Kind {
	out := []Kind{}
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
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
