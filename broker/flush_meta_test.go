package broker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// syncGateFS is an FS whose Sync of the file named name, once armed,
// reports on entered and then waits until release is closed.
type syncGateFS struct {
	vfs.FS
	name    string
	armed   atomic.Bool
	entered chan struct{} // capacity 1: one report is enough
	release chan struct{}
	once    sync.Once
}

func (f *syncGateFS) OpenFile(name string, flag int) (vfs.File, error) {
	h, err := f.FS.OpenFile(name, flag)
	if err != nil || name != f.name || !f.armed.Load() {
		return h, err
	}
	return &syncGateFile{File: h, fs: f}, nil
}

func (f *syncGateFS) open() { f.once.Do(func() { close(f.release) }) }

type syncGateFile struct {
	vfs.File
	fs *syncGateFS
}

func (h *syncGateFile) Sync() error {
	select {
	case h.fs.entered <- struct{}{}:
	default:
	}
	<-h.fs.release
	return h.File.Sync()
}

// snapshotQueues is the queue names the metadata snapshot on disk holds.
func snapshotQueues(t *testing.T, fsys vfs.FS) []string {
	t.Helper()
	m, err := meta.Read(fsys, "/data")
	require.NoError(t, err)
	var names []string
	for _, q := range m.Queues {
		names = append(names, q.Name)
	}
	return names
}

// Issue 26: the metadata snapshot's fsyncs do not run under metaMu. While a
// flush pass waits on the fsync of meta/journal's temporary file, a queue
// is created (metaMu, its commit-log entry synced) and answered; the
// snapshot holds the registry as it was taken, and the next pass writes the
// queue created meanwhile.
func TestMetadataSnapshotFsyncDoesNotHoldMetaMu(t *testing.T) {
	fsys := &syncGateFS{FS: vfs.NewMem(), name: "/data/meta/journal.tmp", entered: make(chan struct{}, 1), release: make(chan struct{})}
	b, err := Open(Config{DataDir: "/data", FS: fsys, Logger: zerolog.Nop(), FlushInterval: time.Hour, MaintenanceInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() {
		fsys.open()
		b.Close()
	})
	_, err = b.Configure(ConfigureRequest{Queue: "before", Options: DefaultQueueOptions()})
	require.NoError(t, err)

	fsys.armed.Store(true) // Open's own pass wrote a snapshot already
	pass := make(chan error, 1)
	go func() { pass <- b.flushPass() }()
	select {
	case <-fsys.entered:
	case err := <-pass:
		t.Fatalf("the pass ended (%v) without syncing a metadata snapshot", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the pass did not reach the metadata snapshot's fsync")
	}

	created := make(chan error, 1)
	go func() {
		_, err := b.Configure(ConfigureRequest{Queue: "during", Options: DefaultQueueOptions()})
		created <- err
	}()
	select {
	case err := <-created:
		require.NoError(t, err)
	case <-pass:
		t.Fatal("the pass ended while its fsync was held")
	case <-time.After(30 * time.Second):
		t.Fatal("a queue creation waited for the metadata snapshot's fsync: metaMu is held across it")
	}

	fsys.open()
	require.NoError(t, <-pass)
	require.Equal(t, []string{"before"}, snapshotQueues(t, fsys), "the snapshot is the registry when it was taken")
	b.metaMu.Lock()
	dirty := b.flush.metaDirty
	b.metaMu.Unlock()
	require.True(t, dirty, "the creation made during the write is left for the next pass")

	require.NoError(t, b.flushPass())
	require.Equal(t, []string{"before", "during"}, snapshotQueues(t, fsys))
	b.metaMu.Lock()
	dirty = b.flush.metaDirty
	b.metaMu.Unlock()
	require.False(t, dirty)
}

// A snapshot whose fsync fails leaves the metadata dirty: the next pass
// writes it again.
func TestMetadataSnapshotThatFailsIsWrittenByTheNextPass(t *testing.T) {
	fsys := errorfs.New(vfs.NewMem())
	b, err := Open(Config{DataDir: "/data", FS: fsys, Logger: zerolog.Nop(), FlushInterval: time.Hour, MaintenanceInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	_, err = b.Configure(ConfigureRequest{Queue: "q", Options: DefaultQueueOptions()})
	require.NoError(t, err)
	injected := errors.New("injected fsync failure")
	fsys.Inject(errorfs.Fault{Op: errorfs.OpSync, Path: "/data/meta/journal.tmp", Count: 1, Err: injected})
	require.ErrorIs(t, b.flushPass(), injected)
	b.metaMu.Lock()
	dirty := b.flush.metaDirty
	b.metaMu.Unlock()
	require.True(t, dirty)
	require.NoError(t, b.flushPass())
	require.Equal(t, []string{"q"}, snapshotQueues(t, fsys))
}
