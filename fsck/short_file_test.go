package fsck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir/datadirtest"
)

// cleanStopped is a directory the real broker wrote and closed cleanly (a
// last flush pass, meta/clean recording every offset as synced): queue
// "orders", partition p0 with offsets 1-30 in segments of 5.
type cleanStopped struct {
	root, p0 string
	seg      string // p0's newest segment file
	lastSeg  int64  // where its last segment starts
	size     int64
}

func newCleanStopped(t *testing.T) *cleanStopped {
	t.Helper()
	m := datadirtest.NewMemBroker(t)
	m.Push("orders", "p0", 30, 5)
	require.NoError(t, m.B.Close())
	m.B = nil
	s := &cleanStopped{root: m.Killed()}
	s.p0 = partDir(s.root, m.Parts["p0"])
	files, err := listSegFiles(s.p0)
	require.NoError(t, err)
	s.seg = filepath.Join(s.p0, files[len(files)-1].Name)
	b, err := os.ReadFile(s.seg)
	require.NoError(t, err)
	s.size = int64(len(b))
	s.lastSeg = int64(bytes.LastIndex(b, []byte("CMBS")))
	require.Greater(t, s.lastSeg, int64(0), "the newest file holds several segments")
	_, err = os.Stat(filepath.Join(s.root, dirMeta, cleanFile))
	require.NoError(t, err, "a clean stop leaves meta/clean")
	return s
}

func (s *cleanStopped) rel(path string) string {
	r, err := filepath.Rel(s.root, path)
	if err != nil {
		panic(err)
	}
	return r
}

// TestCleanStopCutBelowSyncedIsDamage (issue 21 item 4): after a clean stop
// meta/clean records every offset as synced, so fsck judges the files by the
// server's keep rule (package recovery) below that length: a file cut inside
// a segment is short_file and a flipped byte in a full-length segment is
// corrupt_segment, both damage (exit 2) naming the file and the byte range,
// and --repair cuts nothing. Before, fsck verified the log as it was and
// called both a repairable torn tail (exit 1), which --repair cut. Bytes past
// the synced length are still only an unsynced tail the server cuts.
func TestCleanStopCutBelowSyncedIsDamage(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(t *testing.T, s *cleanStopped)
		wantExit int
		want     []Kind
		check    func(t *testing.T, s *cleanStopped, rep *Report)
	}{
		{"the newest segment file cut by 1 byte", func(t *testing.T, s *cleanStopped) {
			require.NoError(t, os.Truncate(s.seg, s.size-1))
		}, ExitDamaged, []Kind{KindShortFile}, func(t *testing.T, s *cleanStopped, rep *Report) {
			f := findOne(t, rep, KindShortFile)
			assert.Equal(t, SeverityDamaged, f.Severity)
			assert.Equal(t, s.rel(s.seg), f.File)
			assert.Equal(t, [2]int64{s.lastSeg, s.size - 1}, [2]int64{f.StartByte, f.EndByte})
			assert.Equal(t, [2]uint64{26, 30}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Equal(t, fmt.Sprintf("the file ends at byte %d inside a segment (short segment (%d of %d bytes)) below offset 31, which was synced (meta/clean says its files were synced up to offset 30): a crash cannot make a synced file shorter, so this is damage, not a torn tail; offsets 26-30 are lost unless recovered from a copy; the server takes the log out of service and cuts nothing",
				s.size-1, s.size-1-s.lastSeg, s.size-s.lastSeg), f.Detail)
			assert.Empty(t, f.Repair)
		}},
		{"the newest segment file cut inside an earlier segment: every synced offset from it on is lost", func(t *testing.T, s *cleanStopped) {
			require.NoError(t, os.Truncate(s.seg, s.lastSeg-1))
		}, ExitDamaged, []Kind{KindShortFile}, func(t *testing.T, s *cleanStopped, rep *Report) {
			f := findOne(t, rep, KindShortFile)
			assert.Equal(t, s.lastSeg-1, f.EndByte)
			// The cut segment held 21-25; 26-30 were synced in the whole segment
			// after it, gone with the cut: the server reports 21-30 (recovery).
			assert.Equal(t, [2]uint64{21, 30}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Contains(t, f.Detail, "; offsets 21-30 are lost unless recovered from a copy;")
		}},
		{"the newest segment file cut inside its header", func(t *testing.T, s *cleanStopped) {
			require.NoError(t, os.Truncate(s.seg, s.lastSeg+20))
		}, ExitDamaged, []Kind{KindShortFile}, func(t *testing.T, s *cleanStopped, rep *Report) {
			f := findOne(t, rep, KindShortFile)
			assert.Equal(t, [2]int64{s.lastSeg, s.lastSeg + 20}, [2]int64{f.StartByte, f.EndByte})
			assert.Contains(t, f.Detail, "partial header (20 of 48 bytes)")
		}},
		{"a flipped byte in the last full-length segment", func(t *testing.T, s *cleanStopped) {
			datadirtest.Overwrite(t, s.seg, s.size-2, []byte{0xEE})
		}, ExitDamaged, []Kind{KindCorruptSegment}, func(t *testing.T, s *cleanStopped, rep *Report) {
			f := findOne(t, rep, KindCorruptSegment)
			assert.Equal(t, [2]int64{s.lastSeg, s.size}, [2]int64{f.StartByte, f.EndByte})
			assert.Equal(t, [2]uint64{26, 30}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Contains(t, f.Detail, "; the file was synced up to offset 30, so the server takes the log out of service: not a torn tail (meta/clean says its files were synced up to offset 30)")
		}},
		{"bytes past the synced length: cut by the server, never acknowledged", func(t *testing.T, s *cleanStopped) {
			f, err := os.OpenFile(s.seg, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("CMBS torn"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, ExitRepairable, []Kind{KindUnsyncedTail}, func(t *testing.T, s *cleanStopped, rep *Report) {
			f := findOne(t, rep, KindUnsyncedTail)
			assert.Equal(t, "9 bytes written unsynced past offset 30 that no commit-log entry holds (never acknowledged): the server cuts them at start", f.Detail)
			assert.Equal(t, SeverityRepairable, f.Severity)
			before, err := os.ReadFile(s.seg)
			require.NoError(t, err)
			assert.Equal(t, ExitRepairable, runOn(t, s.root, ModeRepair).ExitCode, "repaired")
			after, err := os.ReadFile(s.seg)
			require.NoError(t, err)
			assert.Equal(t, before[:len(before)-9], after, "--repair cuts the 9 bytes, as the server's start would")
			assert.Equal(t, ExitClean, runOn(t, s.root, ModeCheck).ExitCode, "clean after the repair")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newCleanStopped(t)
			tc.edit(t, s)
			before, err := os.ReadFile(s.seg)
			require.NoError(t, err)
			rep := runOn(t, s.root, ModeCheck)
			assert.Equal(t, tc.want, kinds(rep), "%+v", rep.Findings)
			assert.Equal(t, tc.wantExit, rep.ExitCode)
			if tc.check != nil {
				tc.check(t, s, rep)
			}
			if tc.wantExit == ExitDamaged {
				rep = runOn(t, s.root, ModeRepair)
				assert.Equal(t, ExitDamaged, rep.ExitCode)
				after, err := os.ReadFile(s.seg)
				require.NoError(t, err)
				assert.Equal(t, before, after, "--repair keeps the damaged file as it is")
			}
		})
	}
}

// TestCommitLogCutIsDamage (issue 21 item 4): the commit log's newest file
// cut inside a batch (shorter than its synced preallocation) is
// commitlog_short_file, damage naming the file and the byte range, and
// --repair leaves it alone; before, it was a repairable torn tail zeroed
// away with acknowledged entries.
func TestCommitLogCutIsDamage(t *testing.T) {
	m := datadirtest.NewMemBroker(t)
	m.Push("orders", "p0", 30, 5)
	root := m.Killed()
	names, err := filepath.Glob(filepath.Join(root, dirCommitLog, "????????????????.wal")) // not the spares
	require.NoError(t, err)
	require.NotEmpty(t, names)
	wal := names[len(names)-1]
	b, err := os.ReadFile(wal)
	require.NoError(t, err)
	end := int64(len(bytes.TrimRight(b, "\x00")))
	require.Less(t, end, int64(len(b)), "preallocated zeros follow the batches")
	cut := end - 3
	require.NoError(t, os.Truncate(wal, cut))

	rep := runOn(t, root, ModeCheck)
	assert.Equal(t, ExitDamaged, rep.ExitCode)
	f := findOne(t, rep, KindCommitLogShortFile)
	assert.Equal(t, SeverityDamaged, f.Severity)
	assert.Equal(t, filepath.Join(dirCommitLog, filepath.Base(wal)), f.File)
	assert.Equal(t, cut, f.EndByte)
	assert.Less(t, f.StartByte, cut)
	assert.True(t, strings.HasPrefix(f.Detail, fmt.Sprintf("commitlog: damaged: %s is shorter than its preallocation: the batch at byte %d runs past the end of the file at byte %d", filepath.Base(wal), f.StartByte, cut)), f.Detail)
	assert.Empty(t, findingsOf(rep, KindCommitLogTornTail), "not a torn tail")

	rep = runOn(t, root, ModeRepair)
	assert.Equal(t, ExitDamaged, rep.ExitCode)
	st, err := os.Stat(wal)
	require.NoError(t, err)
	assert.Equal(t, cut, st.Size(), "--repair keeps the file as it is")
}
