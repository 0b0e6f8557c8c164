package broker

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Issue 10: a lost metadata journal must not make start-up delete data. Open
// refuses, names fsck --repair, and every partition directory stays.
func TestOpenRefusesDataTheJournalDoesNotName(t *testing.T) {
	e := newEnv(t)
	e.push("orders", "a", "t1", "t2")
	e.push("orders", "b", "t3")
	require.NoError(t, e.b.Close())
	e.b = nil
	before := dirNames(t, filepath.Join(e.dir, "partitions"))
	require.Len(t, before, 2)

	for _, damage := range []func(string){
		func(p string) { require.NoError(t, os.Remove(p)) },
		func(p string) { require.NoError(t, os.WriteFile(p, nil, 0o644)) },
	} {
		damage(filepath.Join(e.dir, "meta", "journal"))
		_, err := Open(Config{DataDir: e.dir, Sync: "never", Logger: zerolog.Nop()})
		require.ErrorIs(t, err, ErrStrayData)
		require.Contains(t, err.Error(), "comb fsck --repair")
		require.Equal(t, before, dirNames(t, filepath.Join(e.dir, "partitions")), "nothing deleted")
	}
}

// The descriptors rebuild a journal that names every partition, and the
// rebuilt directory serves every message under its queue and partition name.
func TestRebuiltJournalServesEverything(t *testing.T) {
	e := newEnv(t)
	e.push("orders", "a", "t1", "t2")
	e.push("orders", "b", "t3")
	require.NoError(t, e.b.Close())
	e.b = nil
	require.NoError(t, os.Remove(filepath.Join(e.dir, "meta", "journal")))
	recs, rep, err := meta.Rebuild(nil, e.dir, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, rep.Queues)
	require.Len(t, rep.Partitions, 2)
	require.Empty(t, rep.Undescribed)
	require.NoError(t, meta.WriteJournal(nil, filepath.Join(e.dir, "meta"), recs, true))
	e.open()
	got := txids(e.pop(PopRequest{Queue: "orders", Partition: "a", Batch: 10, AutoAck: true}))
	require.Equal(t, []string{"t1", "t2"}, got)
	got = txids(e.pop(PopRequest{Queue: "orders", Partition: "b", Batch: 10, AutoAck: true}))
	require.Equal(t, []string{"t3"}, got)
}

// The start-up rule's two removals: a directory without records (a creation
// a crash interrupted before its journal record) and the data of a queue the
// journal deleted (a crash in the middle of the delete).
func TestOpenRemovesOnlyWhatHoldsNoAcknowledgedData(t *testing.T) {
	e := newEnv(t)
	e.push("keep", "p", "k1")
	e.push("gone", "p", "g1")
	gone := e.b.lookupQueue("gone")
	goneDir := filepath.Join(e.dir, "partitions", gone.list[0].idStr)
	saved := filepath.Join(t.TempDir(), "saved")
	require.NoError(t, os.Rename(goneDir, saved))
	_, err := e.b.DeleteQueue("gone")
	require.NoError(t, err)
	require.NoError(t, e.b.Close())
	e.b = nil
	require.NoError(t, os.Rename(saved, goneDir)) // as if the crash came before the removal
	empty := filepath.Join(e.dir, "partitions", uuidString(newV7()))
	require.NoError(t, os.MkdirAll(empty, 0o755))
	notAnID := filepath.Join(e.dir, "partitions", "lost+found")
	require.NoError(t, os.MkdirAll(notAnID, 0o755))

	e.open()
	_, err = os.Stat(goneDir)
	require.True(t, os.IsNotExist(err), "the deleted queue's data is removed")
	_, err = os.Stat(empty)
	require.True(t, os.IsNotExist(err), "an empty directory is removed")
	_, err = os.Stat(notAnID)
	require.NoError(t, err, "a name that is not an id is left alone")
	require.Equal(t, []string{"k1"}, txids(e.pop(PopRequest{Queue: "keep", Batch: 10, AutoAck: true})))
}

// Every partition and DLQ directory says what it is; a directory made before
// descriptors gets one at the next start.
func TestDescriptors(t *testing.T) {
	e := newEnv(t)
	e.push("orders", "cust-42", "t1")
	p := e.b.lookupQueue("orders").list[0]
	d, err := meta.ReadDescriptor(nil, filepath.Join(e.dir, "partitions", p.idStr))
	require.NoError(t, err)
	require.Equal(t, meta.Descriptor{Kind: meta.DescribesPartition, QueueID: p.q.id, QueueCreatedAt: p.q.createdAt,
		Queue: "orders", Namespace: "orders", PartitionID: p.id, PartitionCreated: p.createdAt, Partition: "cust-42"}, d)

	res := e.pop(PopRequest{Queue: "orders", Group: "g", Batch: 1})
	e.ack("g", res, "dlq")
	dq, err := meta.ReadDescriptor(nil, filepath.Join(e.dir, "dlq", p.q.idStr))
	require.NoError(t, err)
	require.Equal(t, meta.DescribesDLQ, dq.Kind)
	require.Equal(t, "orders", dq.Queue)

	// A directory from before descriptors: no file, no described record.
	require.NoError(t, e.b.Close())
	e.b = nil
	require.NoError(t, os.Remove(filepath.Join(e.dir, "partitions", p.idStr, meta.DescriptorFile)))
	m, err := meta.Read(nil, e.dir)
	require.NoError(t, err)
	var recs []meta.Record
	for _, r := range m.Records {
		if r.Kind != meta.KindDescribed {
			recs = append(recs, r)
		}
	}
	require.NoError(t, meta.WriteJournal(nil, filepath.Join(e.dir, "meta"), recs, true))
	e.open()
	d2, err := meta.ReadDescriptor(nil, filepath.Join(e.dir, "partitions", p.idStr))
	require.NoError(t, err)
	require.Equal(t, d, d2)
	m, err = meta.Read(nil, e.dir)
	require.NoError(t, err)
	require.True(t, m.Described)
}

// gateFS holds the next fdatasync of a commit-log file once armed, until
// released: a partition creation stuck in its commit-log wait.
type gateFS struct {
	vfs.FS
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gateFS) OpenFile(name string, flag int) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag)
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return gateFile{f, g}, nil
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f gateFile) Sync() error {
	if f.g.armed.CompareAndSwap(true, false) {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return f.File.Sync()
}

// Creating a partition holds no registry lock across its sync (issue 10):
// while one waits for its commit-log entry, existing partitions are found at
// once (a push or pop on them then shares the very same commit-log flush).
func TestCreationDoesNotBlockExistingPartitions(t *testing.T) {
	dir := t.TempDir()
	g := &gateFS{FS: vfs.OS, entered: make(chan struct{}, 1), release: make(chan struct{})}
	b, err := Open(Config{DataDir: dir, Sync: "always", Logger: zerolog.Nop(), FS: g})
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "old", Payload: []byte(`1`)}})
	require.NoError(t, err)

	g.armed.Store(true)
	created := make(chan error, 1)
	go func() {
		_, err := b.Push([]PushItem{{Queue: "q", Partition: "new", Payload: []byte(`2`)}})
		created <- err
	}()
	<-g.entered // the creation now waits for its commit-log entry, holding the metadata lock
	found := make(chan []*partition, 1)
	go func() {
		parts, err := b.ensurePartitions([]partKey{{"q", "old"}})
		require.NoError(t, err)
		found <- parts
	}()
	select {
	case parts := <-found:
		require.Equal(t, "old", parts[0].name)
	case <-time.After(10 * time.Second):
		t.Fatal("looking up an existing partition waited for another partition's creation")
	}
	g.release <- struct{}{}
	require.NoError(t, <-created)
}

// A partition made after the last metadata snapshot lives only in the commit
// log until a flush pass snapshots it: a crash, a recovery (which truncates
// the log) and another restart must still know it.
func TestCreationSurvivesTwoRestartsAfterACrash(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	e.crash()
	e.open()
	e.crash()
	e.open()
	require.Equal(t, []string{"a"}, txids(e.pop(PopRequest{Queue: "q", Partition: "p", Batch: 10, AutoAck: true})))
}
