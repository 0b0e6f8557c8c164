package datadirtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/segment"
)

// Scenario is a directory killed with records only the commit log holds:
// orders/p0 gets 30 records (pushes of 5) and orders/p1 12 (pushes of 4), a
// clean restart makes them durable in the files, then p0 gets 7 more
// (pushes of 3: offsets 31-37) that only the commit log holds synced. It
// returns the broker and the directory as kill -9 leaves it, on disk.
func Scenario(t *testing.T) (*MemBroker, string) {
	t.Helper()
	m := NewMemBroker(t)
	m.Push("orders", "p0", 30, 5)
	m.Push("orders", "p1", 12, 4)
	m.Restart()
	m.Push("orders", "p0", 7, 3)
	return m, m.Killed()
}

// KilledWithGarbage is Scenario's directory with garbage in p0's unsynced
// region (valid segments after it): a naive read of the file fails there.
func KilledWithGarbage(t *testing.T) (*MemBroker, string) {
	t.Helper()
	m, root := Scenario(t)
	cut, err := segment.PlanFrom(PartDir(root, m.Parts["p0"]), 31)
	require.NoError(t, err)
	Overwrite(t, cut.File, cut.At+10, bytes.Repeat([]byte{0xAB}, 60))
	return m, root
}

// PartDir is a partition's directory under a data directory on disk.
func PartDir(root string, id [16]byte) string {
	return filepath.Join(root, layout.Partitions, datadir.IDString(id))
}

// Overwrite writes b into the file at path at byte at, in place.
func Overwrite(t *testing.T, path string, at int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, at)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// SetSummary rewrites meta/summaries with log id's next offset set (unstamped).
func SetSummary(t *testing.T, root string, id [16]byte, next uint64) {
	t.Helper()
	path := filepath.Join(root, layout.Meta, layout.Summaries)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sums, err := segment.DecodeSummaries(b)
	require.NoError(t, err)
	s := sums[id]
	s.NextOffset, s.Stamp = next, 0
	s.FirstOffset = min(max(s.FirstOffset, 1), next)
	sums[id] = s
	require.NoError(t, os.WriteFile(path, segment.EncodeSummaries(sums), 0o644))
}

// ByType returns the lines (DecodeLines) whose "type" is typ.
func ByType(lines []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}
