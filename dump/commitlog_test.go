package dump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/layout"
)

// Issue 14: dump reads a log as the server serves it after recovery: its files up to
// their durable end, then the records only the commit log holds (with their entry's
// LSN), never the unsynced bytes past the durable end.
func TestDumpReadsTheCommitLog(t *testing.T) {
	m, root := datadirtest.KilledWithGarbage(t)
	var out bytes.Buffer
	st, err := Run(root, Options{Queue: "orders", Partition: "p0", Payload: true}, &out)
	require.NoError(t, err)
	assert.Equal(t, int64(37), st.Records)
	lines := datadirtest.DecodeLines(t, out.Bytes())
	part := datadirtest.ByType(lines, "partition")
	require.Len(t, part, 1)
	assert.EqualValues(t, 38, part[0]["nextOffset"])
	recs := datadirtest.ByType(lines, "record")
	require.Len(t, recs, 37)
	for i, r := range recs {
		assert.EqualValues(t, i+1, r["offset"])
		assert.Equal(t, m.Pushed["p0"][i], r["transactionId"])
		_, fromLog := r["lsn"]
		assert.Equal(t, i >= 30, fromLog, "offset %d: only offsets 31-37 come from the commit log", i+1)
	}
	segs := datadirtest.ByType(lines, "segment")
	last := segs[len(segs)-1]
	assert.Equal(t, layout.CommitLog, last["file"])
	assert.EqualValues(t, 37, last["firstOffset"])
}

// Issue 14: --commit-log prints every entry the commit log keeps, in LSN order, with
// what recovery does with each push; with --payload each push's records follow it.
func TestDumpCommitLogEntries(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	var out bytes.Buffer
	st, err := Run(root, Options{CommitLog: true}, &out)
	require.NoError(t, err)
	lines := datadirtest.DecodeLines(t, out.Bytes())
	entries := datadirtest.ByType(lines, "commitlog")
	require.Len(t, entries, int(st.Entries))
	var pushes []map[string]any
	prev := 0.0
	for _, e := range entries {
		assert.Greater(t, e["lsn"], prev, "in LSN order")
		prev = e["lsn"].(float64)
		if e["kind"] == "push" {
			pushes = append(pushes, e)
		}
	}
	require.Len(t, pushes, 3)
	for i, p := range pushes {
		assert.Equal(t, "orders", p["queue"])
		assert.Equal(t, "p0", p["partition"])
		assert.Equal(t, datadir.IDString(m.Parts["p0"]), p["partitionId"])
		assert.EqualValues(t, 31+3*i, p["firstOffset"])
		assert.Equal(t, true, p["replay"], "a restart appends it")
	}
	assert.EqualValues(t, 37, pushes[2]["lastOffset"])
	assert.Empty(t, datadirtest.ByType(lines, "record"), "records only with --payload")

	out.Reset()
	_, err = Run(root, Options{CommitLog: true, Payload: true, Queue: "orders", Partition: "p0"}, &out)
	require.NoError(t, err)
	lines = datadirtest.DecodeLines(t, out.Bytes())
	assert.Len(t, datadirtest.ByType(lines, "commitlog"), 3, "a filter keeps the selected log's pushes")
	recs := datadirtest.ByType(lines, "record")
	require.Len(t, recs, 7)
	for i, r := range recs {
		assert.Equal(t, m.Pushed["p0"][30+i], r["transactionId"])
		assert.NotNil(t, r["payload"])
		assert.NotZero(t, r["lsn"])
	}

	t.Run("entries the files already hold are not replayed", func(t *testing.T) {
		datadirtest.SetSummary(t, root, m.Parts["p0"], 38)
		out.Reset()
		_, err := Run(root, Options{CommitLog: true, Partition: "p0", Queue: "orders"}, &out)
		require.NoError(t, err)
		for _, e := range datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "commitlog") {
			assert.Equal(t, false, e["replay"])
		}
	})
}

// A flipped byte in the commit log with a verified batch after it (not a
// torn tail) stops --commit-log with an error naming the damage, after the
// entries before it; before, the dump ended there and exited 0, as if the
// log had no more entries.
func TestDumpCommitLogDamageIsAnError(t *testing.T) {
	_, root := datadirtest.Scenario(t)
	var out bytes.Buffer
	_, err := Run(root, Options{CommitLog: true}, &out)
	require.NoError(t, err)
	all := len(datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "commitlog"))

	names, err := filepath.Glob(filepath.Join(root, layout.CommitLog, "????????????????.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	wal := names[len(names)-1]
	b, err := os.ReadFile(wal)
	require.NoError(t, err)
	first := bytes.Index(b, []byte("CMWB"))
	require.Greater(t, first, 0)
	datadirtest.Overwrite(t, wal, int64(first+30), []byte{b[first+30] ^ 0x55})

	out.Reset()
	_, err = Run(root, Options{CommitLog: true}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("commit log: %s: bytes [%d,", filepath.Base(wal), first))
	assert.Contains(t, err.Error(), "are damaged and a verified batch follows them (entries after the damage are not printed; run comb fsck)")
	assert.Less(t, len(datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "commitlog")), all, "the entries after the damage are not printed")
}

// flipCommitLogByte damages the commit log's first batch with verified
// batches after it: its later entries are unread (commitlog.Inspect).
func flipCommitLogByte(t *testing.T, root string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, layout.CommitLog, "????????????????.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	wal := names[len(names)-1]
	b, err := os.ReadFile(wal)
	require.NoError(t, err)
	first := bytes.Index(b, []byte("CMWB"))
	require.Greater(t, first, 0)
	datadirtest.Overwrite(t, wal, int64(first+30), []byte{b[first+30] ^ 0x55})
}

// With the commit log damaged, the records only its unread entries hold
// (p0's 31-37 here, acknowledged) cannot be printed; dump prints what it can
// read and fails with ErrCommitLogDamaged, where it used to exit 0 with the
// records silently missing.
func TestDumpRecordsWithADamagedCommitLog(t *testing.T) {
	_, root := datadirtest.Scenario(t)
	flipCommitLogByte(t, root)
	var out bytes.Buffer
	st, err := Run(root, Options{Queue: "orders"}, &out)
	require.ErrorIs(t, err, datadir.ErrCommitLogDamaged)
	assert.Contains(t, err.Error(), "are damaged and a verified batch follows them")
	assert.Equal(t, int64(42), st.Records, "the 30+12 records the files hold below their durable end")
	assert.Len(t, datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "record"), 42)
}
