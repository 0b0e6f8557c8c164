package segment

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

const (
	splitDir  = "/data/partitions/p"
	splitKeep = "/data/quarantine/partitions/p/" // + the file's name
)

// splitLog writes 12 segments of 4 records (offsets 1-48) into files of 4 segments
// each (1-16, 17-32, 33-48), made durable as a stopped broker leaves them, and returns
// the file system and every record by offset.
func splitLog(t *testing.T) (*vfs.Mem, map[uint64]Record) {
	t.Helper()
	fs := vfs.NewStrictMem("/")
	l, _, err := openLog(fs, splitDir, Options{MaxFileBytes: 4 * 400})
	require.NoError(t, err)
	want := map[uint64]Record{}
	for s := 0; s < 12; s++ {
		rs := recs(s*4, 4, 60)
		off, err := l.Append(int64(100*(s+1)), rs)
		require.NoError(t, err)
		for i, r := range rs {
			want[off+uint64(i)] = r
		}
	}
	require.NoError(t, l.Close())
	require.NoError(t, fs.SyncFS("/"))
	names, _ := fs.List(splitDir)
	require.Contains(t, names, segName(17))
	require.Contains(t, names, segName(33))
	return fs, want
}

// segmentStarts returns the byte position of each segment of a file.
func segmentStarts(t *testing.T, b []byte) []int {
	var out []int
	for pos := 0; pos < len(b); {
		h, err := parseHeader(b[pos:])
		require.NoError(t, err)
		out = append(out, pos)
		pos += int(h.size())
	}
	return out
}

// damageSegments flips a payload bit in the given segments (0-based) of file 17-32.
func damageSegments(t *testing.T, fs *vfs.Mem, segs ...int) []byte {
	path := splitDir + "/" + segName(17)
	b := fs.Bytes(path)
	starts := segmentStarts(t, b)
	for _, s := range segs {
		b[starts[s]+HeaderSize+5] ^= 0x08
	}
	fs.SetBytes(path, b)
	return b
}

// served reads every offset of the log at dir: the records it serves, by offset.
func served(t *testing.T, fs vfs.FS, dir string) (map[uint64]Message, *Log) {
	t.Helper()
	l, _, err := openLog(fs, dir, Options{})
	require.NoError(t, err)
	got := map[uint64]Message{}
	for _, m := range readAll(t, l, 1) {
		got[m.Offset] = m
	}
	return got, l
}

func TestSplitKeepsTheGoodSegmentsServing(t *testing.T) {
	cases := []struct {
		name    string
		damaged []int         // segments of file 17-32 to damage
		files   []uint64      // segment files after the split
		gaps    []OffsetRange // what the marker lists
	}{
		{"one segment in the middle", []int{1}, []uint64{1, 17, 25, 33}, []OffsetRange{{21, 24}}},
		{"the first segment", []int{0}, []uint64{1, 21, 33}, []OffsetRange{{17, 20}}},
		{"the last segment", []int{3}, []uint64{1, 17, 33}, []OffsetRange{{29, 32}}},
		{"two apart", []int{0, 2}, []uint64{1, 21, 29, 33}, []OffsetRange{{17, 20}, {25, 28}}},
		{"every segment: the whole file moves", []int{0, 1, 2, 3}, []uint64{1, 33}, []OffsetRange{{17, 32}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, want := splitLog(t)
			orig := damageSegments(t, fs, tc.damaged...)
			p, err := planSplitFS(fs, splitDir, segName(17))
			require.NoError(t, err)
			assert.Equal(t, uint64(17), p.Base)
			assert.Equal(t, uint64(33), p.End)
			assert.Equal(t, tc.gaps, p.Gaps())
			require.NoError(t, applySplitFS(fs, p, splitKeep+segName(17), "kept in quarantine"))

			names, _ := fs.List(splitDir)
			var files []uint64
			for _, n := range names {
				if b, ok := parseSegName(n); ok {
					files = append(files, b)
				}
				assert.NotContains(t, n, splitSuffix)
			}
			assert.Equal(t, tc.files, files)
			assert.Equal(t, orig, fs.Bytes(splitKeep+segName(17)), "the original is kept whole")
			marker, err := readQuarantineFS(fs, splitDir)
			require.NoError(t, err)
			assert.Equal(t, tc.gaps, marker)
			mb, _ := fs.ReadFile(splitDir + "/" + QuarantineFileName)
			assert.Contains(t, string(mb), "kept in quarantine")
			assert.NotContains(t, string(mb), pendingNote)

			got, l := served(t, fs, splitDir)
			assert.Equal(t, uint64(1), l.FirstOffset())
			assert.Equal(t, uint64(49), l.NextOffset())
			for off := uint64(1); off <= 48; off++ {
				if QuarantineCovers(tc.gaps, off, off) {
					assert.NotContains(t, got, off)
					continue
				}
				require.Containsf(t, got, off, "offset %d is served", off)
				requireRecord(t, want[off], got[off])
			}
			require.NoError(t, l.Close())
			var reports []*CorruptionError
			_, err = verifyFS(fs, splitDir, func(ce *CorruptionError) { reports = append(reports, ce) })
			require.NoError(t, err)
			for _, ce := range reports {
				assert.Truef(t, QuarantineCovers(marker, ce.FirstOffset, ce.LastOffset), "only listed gaps remain: %v", ce)
			}
		})
	}
}

func TestPlanSplitRefusesTheNewestFile(t *testing.T) {
	fs, _ := splitLog(t)
	_, err := planSplitFS(fs, splitDir, segName(33))
	assert.ErrorIs(t, err, ErrNotSealed)
	_, err = planSplitFS(fs, splitDir, segName(5))
	assert.ErrorIs(t, err, ErrNotSealed)
}

// dirState is what a split test compares: the log's segment files and marker, and
// what sits in quarantine.
func dirState(fs *vfs.Mem) map[string]string {
	out := map[string]string{}
	for _, d := range []string{splitDir, strings.TrimSuffix(splitKeep, "/")} {
		names, _ := fs.List(d)
		for _, n := range names {
			if strings.HasSuffix(n, ".idx") || strings.HasSuffix(n, ".tmp") {
				continue // caches, rebuilt by Open
			}
			b := fs.Bytes(d + "/" + n)
			if n == QuarantineFileName {
				out[d+"/"+n] = string(b)
			} else {
				out[d+"/"+n] = fmt.Sprintf("%d bytes, xxh64 %016x", len(b), xxhash.Sum64(b))
			}
		}
	}
	return out
}

// Issue 10: a crash at any point of the split leaves a directory the server opens and
// serves correctly: either the damaged original in place (the next repair starts
// over), or the runs moved in with a marker covering every offset missing. Every call
// of a split is failed in turn (which is where a crash would stop it), the twin
// crashed, the directory checked, then FinishSplits (and a new split if the original
// is still there) must reach exactly the state of an uninterrupted split.
func TestSplitCrashAtEveryStep(t *testing.T) {
	for _, damaged := range [][]int{{1}, {0}, {3}, {0, 1, 2, 3}} {
		t.Run(fmt.Sprint(damaged), func(t *testing.T) {
			setup := func() (*vfs.Mem, map[uint64]Record, []byte) {
				fs, want := splitLog(t)
				return fs, want, damageSegments(t, fs, damaged...)
			}
			split := func(fsys fileSystem) error {
				p, err := planSplitFS(fsys, splitDir, segName(17))
				if err != nil {
					return err
				}
				return applySplitFS(fsys, p, splitKeep+segName(17), "kept in quarantine")
			}
			clean, _, _ := setup()
			p, err := planSplitFS(clean, splitDir, segName(17))
			require.NoError(t, err)
			gaps := p.Gaps()
			rec := errorfs.New(clean)
			rec.Record()
			require.NoError(t, split(rec))
			final := dirState(clean)
			trace := rec.Trace()

			for _, errno := range []error{unix.EIO, unix.ENOSPC} {
				for i := 0; i <= len(trace); i++ {
					if i < len(trace) && trace[i].Op == errorfs.OpRead {
						continue
					}
					mem, want, orig := setup()
					fs := errorfs.New(mem)
					msg := "crash after the whole split"
					if i < len(trace) {
						fs.Inject(errorfs.FaultAt(trace, i, errno))
						msg = fmt.Sprintf("%v at call %d %s %s", errno, i, trace[i].Op, trace[i].Path)
					}
					err = split(fs)
					crashed := mem.Crash(true)
					msg += fmt.Sprintf(" (split: %v)", err)

					inPlace := string(crashed.Bytes(splitDir+"/"+segName(17))) == string(orig)
					l, _, err := openLog(crashed, splitDir, Options{})
					require.NoError(t, err, msg)
					marker, merr := readQuarantineFS(crashed, splitDir)
					require.NoError(t, merr, msg)
					var rb ReadBuffer
					for off := uint64(1); off <= 48; off++ {
						msgs, err := l.Read(off, 1, 0, &rb)
						switch {
						case err != nil:
							// Only the damaged bytes, still in place, may fail a read.
							require.Truef(t, inPlace && QuarantineCovers(gaps, off, off), "%s: offset %d: %v", msg, off, err)
						case len(msgs) == 1 && msgs[0].Offset == off:
							requireRecord(t, want[off], msgs[0])
						default:
							require.Falsef(t, inPlace, "%s: offset %d skipped while the original is in place", msg, off)
							require.Truef(t, QuarantineCovers(marker, off, off), "%s: offset %d is missing and no marker line covers it", msg, off)
						}
					}
					if !inPlace {
						require.Equal(t, string(orig), string(crashed.Bytes(splitKeep+segName(17))), "%s: the original is kept", msg)
					}
					require.NoError(t, l.Close())

					_, err = finishSplitsFS(crashed, splitDir)
					require.NoError(t, err, msg)
					if string(crashed.Bytes(splitDir+"/"+segName(17))) == string(orig) {
						require.NoError(t, split(crashed), msg)
					}
					assert.Equal(t, keys(final), keys(dirState(crashed)), msg)
					assert.Equal(t, final, dirState(crashed), msg)
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
