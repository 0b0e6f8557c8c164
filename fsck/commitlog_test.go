package fsck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/segment"
)

// Issue 14: a server killed before its first flush pass leaves everything in the
// commit log: no metadata snapshot, partition files written but never synced.
// Nothing is damaged or orphaned: the partitions are named by the commit log's
// metadata entries, and every record is reported as what the server replays.
func TestKilledBeforeAFlushPassIsClean(t *testing.T) {
	m := datadirtest.NewMemBroker(t)
	m.Push("orders", "p0", 30, 5)
	m.Push("orders", "p1", 12, 4)
	for name, root := range map[string]string{"kill -9": m.Killed(), "power loss": m.PowerLost()} {
		t.Run(name, func(t *testing.T) {
			rep := runOn(t, root, ModeCheck)
			assert.Equal(t, int64(42), rep.Totals.CommitLog.OnlyInCommitLog)
			assert.Equal(t, int64(42), rep.Totals.CommitLog.PushRecords)
			assert.Equal(t, 1, rep.Totals.Queues)
			assert.Len(t, findingsOf(rep, KindUnsyncedTail), 2)
			for _, f := range rep.Findings {
				if f.Kind == KindUnsyncedTail {
					assert.Equal(t, uint64(1), f.FirstOffset)
					continue
				}
				// A power loss also takes the dedup index's unsynced header: stale.
				require.Equal(t, KindDedupStale, f.Kind, "%+v", f)
			}
			if name == "kill -9" {
				assert.Equal(t, ExitClean, rep.ExitCode, "%+v", rep.Findings)
			}
		})
	}
}

// walScenario is a directory the real broker wrote and a kill -9 left: queue
// "orders", p0 with offsets 1-30 synced by a clean restart and 31-37 pushed after
// it (in the commit log, written unsynced to the file), p1 with 1-12 synced.
type walScenario struct {
	root   string
	p0, p1 string // partition directories
	cut    segment.UnsyncedCut
}

func newWALScenario(t *testing.T, consume bool) *walScenario {
	t.Helper()
	m := datadirtest.NewMemBroker(t)
	m.Push("orders", "p0", 30, 5)
	m.Push("orders", "p1", 12, 4)
	m.Restart()
	m.Push("orders", "p0", 7, 3)
	if consume {
		require.Equal(t, 49, m.Consume("orders", "g", 100))
	}
	s := &walScenario{root: m.Killed()}
	s.p0, s.p1 = partDir(s.root, m.Parts["p0"]), partDir(s.root, m.Parts["p1"])
	var err error
	s.cut, err = segment.PlanFrom(s.p0, 31)
	require.NoError(t, err)
	require.NotEmpty(t, s.cut.File, "p0's unsynced offsets 31-37 are in its newest file")
	return s
}

// Issue 14, the server's rule: a log is judged as usual below its durable end
// (max of its summary's next offset and its first commit-log entry's base); what
// its files hold from there on was written unsynced, and whatever it is (whole,
// torn, garbage with valid segments after it, gone), it is no damage: the server
// cuts it and replays the commit log (info, exit 0). Below the durable end
// damage is damage, and offsets missing there that the commit log does not hold
// either are lost.
func TestDurableRegionRule(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(t *testing.T, s *walScenario)
		wantExit int
		want     []Kind // every finding's kind, in report order
		check    func(t *testing.T, s *walScenario, rep *Report)
	}{
		{"as killed: the unsynced tail is replayed", func(*testing.T, *walScenario) {}, ExitClean, []Kind{KindUnsyncedTail},
			func(t *testing.T, s *walScenario, rep *Report) {
				f := findOne(t, rep, KindUnsyncedTail)
				assert.Equal(t, [2]uint64{31, 37}, [2]uint64{f.FirstOffset, f.LastOffset})
				assert.Contains(t, f.Detail, "bytes written unsynced past offset 30: the server cuts them and replays them from the commit log")
				assert.Contains(t, f.Detail, "7 records (offsets 31-37) are only in the commit log")
				assert.Equal(t, int64(7), rep.Totals.CommitLog.OnlyInCommitLog)
			}},
		{"garbage in the unsynced region with valid segments after it", func(t *testing.T, s *walScenario) {
			datadirtest.Overwrite(t, s.cut.File, s.cut.At+10, bytes.Repeat([]byte{0xAB}, 60))
		}, ExitClean, []Kind{KindUnsyncedTail}, nil},
		{"zeros where the unsynced segments were (a power loss)", func(t *testing.T, s *walScenario) {
			datadirtest.Overwrite(t, s.cut.File, s.cut.At, make([]byte, s.cut.Bytes))
		}, ExitClean, []Kind{KindUnsyncedTail}, nil},
		{"the unsynced bytes gone", func(t *testing.T, s *walScenario) {
			require.NoError(t, os.Truncate(s.cut.File, s.cut.At))
		}, ExitClean, []Kind{KindUnsyncedTail}, func(t *testing.T, s *walScenario, rep *Report) {
			f := findOne(t, rep, KindUnsyncedTail)
			assert.Equal(t, "7 records (offsets 31-37) are only in the commit log: the server appends them to the log at start", f.Detail)
		}},
		{"meta/summaries lost: the first commit-log entry says the same", func(t *testing.T, s *walScenario) {
			require.NoError(t, os.Remove(filepath.Join(s.root, dirMeta, summariesFile)))
		}, ExitClean, []Kind{KindUnsyncedTail}, nil},
		{"meta/summaries damaged: ignored, as the server does", func(t *testing.T, s *walScenario) {
			path := filepath.Join(s.root, dirMeta, summariesFile)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			datadirtest.Overwrite(t, path, int64(len(b)-1), []byte{b[len(b)-1] ^ 1})
		}, ExitClean, []Kind{KindSummariesIgnored, KindUnsyncedTail}, nil},
		{"a flipped bit below the durable end is damage, and the server refuses the log", func(t *testing.T, s *walScenario) {
			files, err := listSegFiles(s.p0)
			require.NoError(t, err)
			datadirtest.Overwrite(t, filepath.Join(s.p0, files[0].Name), 60, []byte{0xFF})
		}, ExitDamaged, []Kind{KindCorruptSegment}, func(t *testing.T, s *walScenario, rep *Report) {
			f := findOne(t, rep, KindCorruptSegment)
			assert.Equal(t, [2]uint64{1, 5}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Contains(t, f.Detail, "the file was synced up to offset 30, so the server takes the log out of service")
			assert.Empty(t, f.Repair, "cutting the synced file at the damage would lose more")
		}},
		{"the durable region cut short: offsets in neither the file nor the commit log", func(t *testing.T, s *walScenario) {
			end := s.cut.At
			b, err := os.ReadFile(s.cut.File)
			require.NoError(t, err)
			last := bytes.LastIndex(b[:end], []byte("CMBS"))
			require.Greater(t, last, 0)
			require.NoError(t, os.Truncate(s.cut.File, int64(last)))
		}, ExitDamaged, []Kind{KindMissingOffsets}, func(t *testing.T, s *walScenario, rep *Report) {
			f := findOne(t, rep, KindMissingOffsets)
			assert.Equal(t, [2]uint64{26, 30}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Contains(t, f.Detail, "meta/summaries says its files were synced up to offset 30")
			assert.NotContains(t, f.Detail, "the commit log still holds")
		}},
		{"a summary past the file: the commit log still holds the offsets, but the server refuses the log", func(t *testing.T, s *walScenario) {
			path := filepath.Join(s.root, dirMeta, summariesFile)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			sums, err := segment.DecodeSummaries(b)
			require.NoError(t, err)
			for id, sum := range sums {
				if partDir(s.root, id) == s.p0 {
					sum.NextOffset, sum.Stamp = 35, 0
					sums[id] = sum
				}
			}
			require.NoError(t, os.WriteFile(path, segment.EncodeSummaries(sums), 0o644))
			require.NoError(t, os.Truncate(s.cut.File, s.cut.At))
		}, ExitDamaged, []Kind{KindMissingOffsets}, func(t *testing.T, s *walScenario, rep *Report) {
			f := findOne(t, rep, KindMissingOffsets)
			assert.Equal(t, [2]uint64{31, 34}, [2]uint64{f.FirstOffset, f.LastOffset})
			assert.Contains(t, f.Detail, "the commit log still holds offsets 31-34")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newWALScenario(t, false)
			tc.edit(t, s)
			rep := runOn(t, s.root, ModeCheck)
			assert.Equal(t, tc.want, kinds(rep), "%+v", rep.Findings)
			assert.Equal(t, tc.wantExit, rep.ExitCode)
			if tc.check != nil {
				tc.check(t, s, rep)
			}
			for _, f := range rep.Findings {
				assert.False(t, strings.Contains(f.Detail, "%!"), f.Detail)
			}
		})
	}
}

// Issue 14: cursors are judged after the server's recovery: the snapshot with the
// commit log's checkpoints applied, against a high-water mark that counts the
// records only the commit log holds. A group that consumed everything, the last
// records of which were never synced to the partition file, is fine.
func TestCursorsIntoTheCommitLog(t *testing.T) {
	s := newWALScenario(t, true)
	require.NoError(t, os.Truncate(s.cut.File, s.cut.At)) // as a power loss leaves it
	rep := runOn(t, s.root, ModeCheck)
	assert.Equal(t, []Kind{KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
	assert.Equal(t, ExitClean, rep.ExitCode)
	assert.Equal(t, 2, rep.Totals.Cursors, "the group's cursors come from the commit log's checkpoints")
}
