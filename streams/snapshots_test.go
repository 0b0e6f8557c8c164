package streams

import (
	"errors"
	"fmt"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failSyncDir is a file system whose SyncDir fails while fail is set.
type failSyncDir struct {
	vfs.FS
	fail bool
}

func (f *failSyncDir) SyncDir(dir string) error {
	if f.fail {
		return errors.New("injected SyncDir failure")
	}
	return f.FS.SyncDir(dir)
}

func partition(i int) [16]byte { return [16]byte{15: byte(i), 14: byte(i >> 8), 0: 9} }

// A pass writes every dirty shard's snapshot as one batch (an fsync each
// through its own descriptor; with Files.SyncFS one syncfs from
// snapshotSyncFSMin files on); after a power loss each shard holds what the
// pass wrote, in new query directories too. Without SyncFS the twin's
// syncfs syncs nothing, as on a file system without sync_fs (issue 21).
func TestWriteSnapshotsBatchSurvivesACrash(t *testing.T) {
	qB := [16]byte{7}
	for _, tc := range []struct {
		shards int
		syncFS bool
	}{{3, false}, {snapshotSyncFSMin, false}, {40, false}, {snapshotSyncFSMin, true}, {40, true}} {
		t.Run(fmt.Sprint("shards=", tc.shards, ",syncfs=", tc.syncFS), func(t *testing.T) {
			shards := tc.shards
			mem := vfs.NewStrictMem("/d/streams")
			mem.SetSyncFSNoop(!tc.syncFS)
			f := &Files{FS: mem, Root: "/d/streams", SyncFS: tc.syncFS}
			s := newStoreWith(t)
			s.ApplyQuery(2, Query{ID: qB, Name: "b", Source: "src", ConfigHash: "h"}, false)
			lsn := uint64(10)
			for round := 1; round <= 2; round++ {
				for i := 0; i < shards; i++ {
					if round == 2 && i%2 == 1 {
						continue // the second pass has only half the shards dirty
					}
					lsn++
					q := qA
					if i%3 == 0 {
						q = qB
					}
					s.ApplyChange(lsn, &Change{Query: q, Partition: partition(i), Ops: []Op{upsert("k", fmt.Sprint(round), 1)}})
				}
				require.NoError(t, s.WriteRegistry(f, lsn))
				require.NoError(t, s.WriteSnapshots(f))
				assert.Zero(t, s.MinDirtyLSN(), "round %d: every shard written", round)
			}
			l, err := (&Files{FS: mem.Crash(false), Root: "/d/streams"}).Load()
			require.NoError(t, err)
			got := NewStore()
			assert.Empty(t, got.Restore(l, func([16]byte) bool { return true }))
			for i := 0; i < shards; i++ {
				q, want := qA, "2"
				if i%3 == 0 {
					q = qB
				}
				if i%2 == 1 {
					want = "1"
				}
				rows := got.Rows(ShardKey{q, partition(i)}, Filter{})
				require.Len(t, rows, 1, "shard %d", i)
				assert.Equal(t, want, string(rows[0].Value), "shard %d", i)
			}
		})
	}
}

// A shard counts as written only once its directory's sync succeeded: until
// then it keeps the commit log (MinDirtyLSN), and the next pass writes it.
func TestWriteSnapshotsFailedDirSyncKeepsShardsDirty(t *testing.T) {
	mem := vfs.NewStrictMem("/d/streams")
	fsys := &failSyncDir{FS: mem}
	f := &Files{FS: fsys, Root: "/d/streams"}
	s := newStoreWith(t)
	require.NoError(t, s.WriteRegistry(f, 1))
	for i := 0; i < 10; i++ {
		s.ApplyChange(uint64(20+i), &Change{Query: qA, Partition: partition(i), Ops: []Op{upsert("k", "1", 1)}})
	}
	fsys.fail = true
	require.Error(t, s.WriteSnapshots(f))
	assert.Equal(t, uint64(20), s.MinDirtyLSN())
	l, err := (&Files{FS: mem.Crash(false), Root: "/d/streams"}).Load()
	require.NoError(t, err)
	assert.Empty(t, l.Snapshots, "nothing durable: the query directory was never synced into the root")

	fsys.fail = false
	require.NoError(t, s.WriteSnapshots(f))
	assert.Zero(t, s.MinDirtyLSN())
	l, err = (&Files{FS: mem.Crash(false), Root: "/d/streams"}).Load()
	require.NoError(t, err)
	assert.Len(t, l.Snapshots, 10)
}

// The store's directory is synced into the data directory when it is made:
// after a power loss the registry and the snapshots are still there, and
// they are the only copy once the commit log was truncated behind them.
func TestStoreDirectorySurvivesACrash(t *testing.T) {
	for _, first := range []string{"registry", "snapshots"} {
		t.Run(first+" first", func(t *testing.T) {
			mem := vfs.NewStrictMem("/d") // the data directory
			f := &Files{FS: mem, Root: "/d/streams"}
			s := newStoreWith(t)
			s.ApplyChange(5, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", "1", 1)}})
			if first == "registry" {
				require.NoError(t, s.WriteRegistry(f, 5))
				require.NoError(t, s.WriteSnapshots(f))
			} else {
				require.NoError(t, s.WriteSnapshots(f))
				require.NoError(t, s.WriteRegistry(f, 5))
			}
			l, err := (&Files{FS: mem.Crash(false), Root: "/d/streams"}).Load()
			require.NoError(t, err)
			assert.True(t, l.HasReg)
			assert.Len(t, l.Snapshots, 1)
		})
	}
}
