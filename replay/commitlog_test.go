package replay

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/dump"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/segment"
)

// Issue 14: records only the commit log holds were acknowledged: comb replay
// --data-dir pushes them too, after the partition file's durable records and in
// order, and never the unsynced bytes past the durable end; so does a replay from a
// dump of the same directory.
func TestReplayIncludesTheCommitLog(t *testing.T) {
	for _, source := range []string{"data-dir", "dump-file"} {
		t.Run(source, func(t *testing.T) {
			m, root := datadirtest.KilledWithGarbage(t)
			target := newFakeTarget()
			srv := httptest.NewServer(target)
			defer srv.Close()
			opts := Options{Target: srv.URL, Batch: 4}
			if source == "data-dir" {
				opts.DataDir = root
			} else {
				var dumped bytes.Buffer
				_, err := dump.Run(root, dump.Options{Records: true, Payload: true}, &dumped)
				require.NoError(t, err)
				opts.DumpFile = filepath.Join(t.TempDir(), "dump.jsonl")
				require.NoError(t, os.WriteFile(opts.DumpFile, dumped.Bytes(), 0o644))
			}
			st, err := Run(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, int64(49), st.Pushed)
			assert.Equal(t, m.Pushed["p0"], target.order["orders/p0"])
			assert.Equal(t, m.Pushed["p1"], target.order["orders/p1"])
		})
	}
}

// With the commit log damaged (a flipped byte in its first batch, verified
// batches after it), p0's records 31-37 exist only in unread entries: replay
// pushes the 42 records it can read and then fails with
// datadir.ErrCommitLogDamaged, where it used to report success with those
// acknowledged records missing on the target.
func TestReplayWithADamagedCommitLogFails(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	names, err := filepath.Glob(filepath.Join(root, layout.CommitLog, "????????????????.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	wal := names[len(names)-1]
	b, err := os.ReadFile(wal)
	require.NoError(t, err)
	first := bytes.Index(b, []byte("CMWB"))
	require.Greater(t, first, 0)
	datadirtest.Overwrite(t, wal, int64(first+30), []byte{b[first+30] ^ 0x55})

	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	st, err := Run(context.Background(), Options{Target: srv.URL, Batch: 4, DataDir: root})
	require.ErrorIs(t, err, datadir.ErrCommitLogDamaged)
	assert.Equal(t, int64(42), st.Pushed)
	assert.Equal(t, m.Pushed["p0"][:30], target.order["orders/p0"])
	assert.Equal(t, m.Pushed["p1"], target.order["orders/p1"])
}

// A flipped byte in a synced segment of p0 (the push of offsets 16-20): replay pushes p0's
// records before it and all of p1, then fails naming p0 with ErrSourceDamaged. It used to push
// nothing of p0 (the partial batch was dropped with the error) and cancel the other partitions.
func TestReplayPushesAroundADamagedSegment(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	cut, err := segment.PlanFrom(datadirtest.PartDir(root, m.Parts["p0"]), 16)
	require.NoError(t, err)
	b, err := os.ReadFile(cut.File)
	require.NoError(t, err)
	datadirtest.Overwrite(t, cut.File, cut.At+20, []byte{b[cut.At+20] ^ 0x55})

	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	st, err := Run(context.Background(), Options{Target: srv.URL, Batch: 4, Concurrency: 1, DataDir: root})
	require.ErrorIs(t, err, ErrSourceDamaged)
	assert.Contains(t, err.Error(), datadir.IDString(m.Parts["p0"]))
	assert.Equal(t, m.Pushed["p0"][:15], target.order["orders/p0"])
	assert.Equal(t, m.Pushed["p1"], target.order["orders/p1"])
	assert.Equal(t, int64(15+12), st.Pushed)
}
