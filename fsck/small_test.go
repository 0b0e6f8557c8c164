package fsck

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// writeSmall writes an entry log of n one-record segments of one partition
// under d.root/small, synced, then one more unsynced frame; it returns the
// file's path and its synced length.
func (d *testDir) writeSmall(n int) (string, int64) {
	d.t.Helper()
	seg, _, err := segment.Open("/seg", segment.Options{FS: vfs.NewMem()})
	require.NoError(d.t, err)
	defer seg.Close()
	l, _, err := entrylog.Open(filepath.Join(d.root, dirSmall), entrylog.Options{})
	require.NoError(d.t, err)
	id := [16]byte{1, 2, 3}
	for i := 0; i <= n; i++ {
		if i == n {
			require.NoError(d.t, l.Sync())
		}
		_, b, err := seg.AppendTo(nil, int64(i+1), []segment.Record{{TransactionID: "t", Payload: []byte(`{"n":1}`)}})
		require.NoError(d.t, err)
		_, err = l.Append(id, b)
		require.NoError(d.t, err)
	}
	require.NoError(d.t, l.Close())
	path := filepath.Join(d.root, dirSmall, entrylog.FileName(1))
	chk, err := entrylog.Check(vfs.OS, filepath.Join(d.root, dirSmall))
	require.NoError(d.t, err)
	return path, chk.Files[0].Synced
}

// A clean shared file is no finding.
func TestSmallCleanIsNoFinding(t *testing.T) {
	d := newTestDir(t)
	d.writeSmall(3)
	rep := d.run(ModeCheck)
	require.Empty(t, findingsOf(rep, KindSmallCorrupt))
	require.Empty(t, findingsOf(rep, KindSmallTornTail))
}

// A torn tail past the synced length is repairable, and --repair cuts it
// (the bytes kept in quarantine/small/), after which the check is clean.
func TestSmallTornTailIsRepaired(t *testing.T) {
	d := newTestDir(t)
	path, synced := d.writeSmall(3)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-3], 0o644))
	rep := d.run(ModeCheck)
	fs := findingsOf(rep, KindSmallTornTail)
	require.Len(t, fs, 1)
	require.Equal(t, SeverityRepairable, fs[0].Severity)
	require.Equal(t, synced, fs[0].StartByte)
	require.Equal(t, filepath.Join(dirSmall, entrylog.FileName(1)), fs[0].File)

	rep = d.run(ModeRepair)
	require.True(t, findingsOf(rep, KindSmallTornTail)[0].Repaired)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, b[:synced], after)
	kept, err := os.ReadFile(filepath.Join(d.root, dirQuarantine, dirSmall, entrylog.FileName(1)+".from-"+strconv.FormatInt(synced, 10)))
	require.NoError(t, err)
	require.Equal(t, b[synced:len(b)-3], kept)
	require.Empty(t, findingsOf(d.run(ModeCheck), KindSmallTornTail))
}

// A flipped byte below the synced length is damage: exit 2, nothing repaired.
func TestSmallDamageBelowSynced(t *testing.T) {
	d := newTestDir(t)
	path, synced := d.writeSmall(3)
	d.flipBit(path, synced-2)
	rep := d.run(ModeCheck)
	fs := findingsOf(rep, KindSmallCorrupt)
	require.Len(t, fs, 1)
	require.Equal(t, SeverityDamaged, fs[0].Severity)
	require.Equal(t, ExitDamaged, rep.ExitCode)
}
