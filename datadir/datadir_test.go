package datadir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/segment"
)

// Check accepts a directory the server wrote and refuses, with ErrNotDataDir,
// one that is missing, a file, or holds none of the server's entries.
func TestCheck(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 1, 3, 3)
	require.NoError(t, datadir.Check(d.Root))

	empty := t.TempDir()
	file := filepath.Join(empty, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, dir := range map[string]string{"missing": filepath.Join(empty, "nope"), "a file": file, "no comb entry": empty} {
		assert.ErrorIs(t, datadir.Check(dir), datadir.ErrNotDataDir, name)
	}
}

// recovered is what EachRecovered yields for one log: each record's offset and
// the LSN of the commit-log entry it came from (0: the log's files).
func recovered(t *testing.T, v *datadir.View, d datadir.LogDir, from uint64) (offsets []uint64, lsns []uint64) {
	t.Helper()
	err := v.EachRecovered(d, from, func(s datadir.SegInfo, lsn uint64, msgs []segment.Message) bool {
		if lsn != 0 {
			assert.Equal(t, layout.CommitLog, s.File, "a segment only the commit log holds is named for it")
		}
		for _, m := range msgs {
			offsets = append(offsets, m.Offset)
			lsns = append(lsns, lsn)
		}
		return true
	})
	require.NoError(t, err)
	return offsets, lsns
}

func logOf(t *testing.T, root string, id [16]byte) datadir.LogDir {
	t.Helper()
	logs, err := datadir.ListLogs(root)
	require.NoError(t, err)
	for _, d := range logs {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no log %s in %s", datadir.IDString(id), root)
	return datadir.LogDir{}
}

// Issue 14: a log written behind the commit log is read as the server serves it
// after recovery: its files below the durable end (offsets 1-30 of p0, synced by
// the restart), then the segments only the commit log holds (31-37), never the
// unsynced bytes past the durable end, whatever they are.
func TestEachRecoveredIsWhatTheServerServes(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) (*datadirtest.MemBroker, string){
		"killed":                       datadirtest.Scenario,
		"garbage past the durable end": datadirtest.KilledWithGarbage,
	} {
		t.Run(name, func(t *testing.T) {
			m, root := mk(t)
			v, err := datadir.Load(root, func([16]byte) bool { return true })
			require.NoError(t, err)
			p0, p1 := logOf(t, root, m.Parts["p0"]), logOf(t, root, m.Parts["p1"])

			keep, behind := v.Rule.KeepBelow(p0.ID, false)
			assert.True(t, behind, "p0 is written behind the commit log")
			assert.Equal(t, uint64(31), keep, "the files are trusted below the restart's summary")

			offsets, lsns := recovered(t, v, p0, 0)
			require.Len(t, offsets, 37)
			for i, off := range offsets {
				assert.Equal(t, uint64(i+1), off)
				assert.Equal(t, off >= 31, lsns[i] != 0, "offset %d: only 31-37 come from the commit log", off)
			}
			next, keep := v.RecoveredNext(p0, 0)
			assert.Equal(t, uint64(38), next)
			assert.Equal(t, uint64(31), keep)

			// The commit log holds p0's 31-37 as pushes of 3: 31-33, 34-36, 37.
			offsets, _ = recovered(t, v, p0, 34)
			assert.Equal(t, []uint64{34, 35, 36, 37}, offsets, "from an offset: from the segment holding it")

			offsets, lsns = recovered(t, v, p1, 0)
			assert.Len(t, offsets, 12)
			assert.Equal(t, make([]uint64, 12), lsns, "p1's records are all in its files")
		})
	}
}

// Load keeps commit-log segment bytes only for the logs want selects: a log it
// does not select cannot be read past its durable end (the check reads the
// commit log for its entries' headers only).
func TestLoadKeepsOnlyTheSelectedLogsBytes(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	v, err := datadir.Load(root, nil)
	require.NoError(t, err)
	err = v.EachRecovered(logOf(t, root, m.Parts["p0"]), 0, func(datadir.SegInfo, uint64, []segment.Message) bool { return true })
	assert.ErrorContains(t, err, "was not read")
}

// SelectLogs: by queue and partition name, by id, with the DLQ logs on
// request; a filter that selects nothing is ErrNotFound.
func TestSelectLogs(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 3, 2, 2)
	v, err := datadir.Load(d.Root, nil)
	require.NoError(t, err)
	all, names, err := datadir.SelectLogs(d.Root, v, "", "", "", false)
	require.NoError(t, err)
	require.Len(t, all, 3)
	for _, l := range all {
		assert.Equal(t, d.Names[l.ID].Name, names[l.Rel].Name)
		assert.Equal(t, "orders", names[l.Rel].Queue)
	}

	one, _, err := datadir.SelectLogs(d.Root, v, "orders", "p1", "", false)
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Equal(t, "p1", d.Names[one[0].ID].Name)

	byID, _, err := datadir.SelectLogs(d.Root, v, "", "", datadir.IDString(one[0].ID), false)
	require.NoError(t, err)
	assert.Equal(t, one, byID)

	for name, f := range map[string][3]string{"unknown queue": {"nope", "", ""}, "unknown partition": {"orders", "p9", ""}, "unknown id": {"", "", uuid.NewString()}} {
		_, _, err := datadir.SelectLogs(d.Root, v, f[0], f[1], f[2], false)
		assert.ErrorIs(t, err, datadir.ErrNotFound, name)
	}
}

// The keep rule fsck reads by is the server's, DLQ case included: a DLQ log
// that neither a summary nor the commit log names, while a summaries file
// decoded, is kept from nothing (the server cuts it to quarantine), a
// partition in the same place is verified as it is, and without a summaries
// file that decodes both are (recovery.Start.Facts).
func TestKeepBelowIsTheServersRuleForANeverSyncedDLQ(t *testing.T) {
	id, other := [16]byte{1}, [16]byte{2}
	r := &datadir.Rule{Sums: map[[16]byte]segment.Summary{other: {FirstOffset: 1, NextOffset: 5}}, WAL: &datadir.WAL{}}
	keep, behind := r.KeepBelow(id, true)
	assert.Equal(t, []any{uint64(1), true}, []any{keep, behind}, "a never-synced DLQ log keeps nothing")
	keep, behind = r.KeepBelow(id, false)
	assert.Equal(t, []any{uint64(0), false}, []any{keep, behind}, "a partition nothing names is verified")
	keep, behind = r.KeepBelow(other, true)
	assert.Equal(t, []any{uint64(5), true}, []any{keep, behind}, "a DLQ log with a summary keeps what it synced")

	none := &datadir.Rule{WAL: &datadir.WAL{}}
	keep, behind = none.KeepBelow(id, true)
	assert.Equal(t, []any{uint64(0), false}, []any{keep, behind}, "no summaries file: nothing says what was synced")
}
