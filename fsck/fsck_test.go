package fsck

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/index"
	"github.com/combmq/comb/lease"
)

const ts0 = int64(1_700_000_000_000_000)

// segmentBounds returns [start, end) of every segment of a sealed file, from its index.
func segmentBounds(t *testing.T, segPath string) [][2]int64 {
	t.Helper()
	st, err := os.Stat(segPath)
	require.NoError(t, err)
	b, err := os.ReadFile(strings.TrimSuffix(segPath, ".seg") + ".idx")
	require.NoError(t, err)
	body := b[index.HeaderSize:]
	var out [][2]int64
	for off := 0; off+index.EntrySize <= len(body); off += index.EntrySize {
		e, ok := index.DecodeEntry(body[off:])
		if !ok {
			break
		}
		if len(out) > 0 {
			out[len(out)-1][1] = e.Pos
		}
		out = append(out, [2]int64{e.Pos, st.Size()})
	}
	return out
}

func findOne(t *testing.T, r *Report, k Kind) Finding {
	t.Helper()
	var got []Finding
	for _, f := range r.Findings {
		if f.Kind == k {
			got = append(got, f)
		}
	}
	require.Lenf(t, got, 1, "findings of kind %s in %v", k, kinds(r))
	return got[0]
}

// TestVerdicts checks the exit code and finding kinds fsck gives each kind of
// damage (issue 5: a torn tail is repairable, exit 1; damage in a sealed file or
// mid-file needs a person, exit 2), and what a second run says after --repair.
func TestVerdicts(t *testing.T) {
	random := make([]byte, 91)
	_, _ = rand.Read(random)
	cases := []struct {
		name        string
		damage      func(d *testDir, id uuid.UUID)
		wantKinds   []Kind
		wantExit    int
		afterRepair int // exit code of a check after --repair
	}{
		{"clean directory exits 0", func(*testDir, uuid.UUID) {}, []Kind{}, ExitClean, ExitClean},
		{"zero bytes after the last segment are a torn tail", func(d *testDir, id uuid.UUID) {
			f := d.segFiles(id)
			d.appendBytes(f[len(f)-1], make([]byte, 64))
		}, []Kind{KindTornTail}, ExitRepairable, ExitClean},
		{"garbage after the last segment is a torn tail", func(d *testDir, id uuid.UUID) {
			f := d.segFiles(id)
			d.appendBytes(f[len(f)-1], append(make([]byte, 37), random...))
		}, []Kind{KindTornTail}, ExitRepairable, ExitClean},
		{"a deleted index is rebuilt", func(d *testDir, id uuid.UUID) {
			require.NoError(t, os.Remove(strings.TrimSuffix(d.segFiles(id)[1], ".seg")+".idx"))
		}, []Kind{KindIndexMissing}, ExitRepairable, ExitClean},
		{"a truncated index is rebuilt", func(d *testDir, id uuid.UUID) {
			require.NoError(t, os.Truncate(strings.TrimSuffix(d.segFiles(id)[1], ".seg")+".idx", index.HeaderSize+index.EntrySize+7))
		}, []Kind{KindIndexStale}, ExitRepairable, ExitClean},
		{"a garbage dedup tail is dropped", func(d *testDir, id uuid.UUID) {
			d.appendBytes(filepath.Join(d.partitionDir(id), dedupFile), random[:9])
		}, []Kind{KindDedupStale}, ExitRepairable, ExitClean},
		{"a flipped bit mid-way in dedup.idx is damage to the cache, rebuilt", func(d *testDir, id uuid.UUID) {
			d.flipBit(filepath.Join(d.partitionDir(id), dedupFile), index.DedupHeaderSize+100*index.DedupEntrySize+3)
		}, []Kind{KindDedupDamaged}, ExitRepairable, ExitClean},
		{"a flipped bit in the dedup.idx header is damage to the cache, rebuilt", func(d *testDir, id uuid.UUID) {
			d.flipBit(filepath.Join(d.partitionDir(id), dedupFile), 9)
		}, []Kind{KindDedupDamaged}, ExitRepairable, ExitClean},
		{"a dedup.idx of another partition is damage, rebuilt", func(d *testDir, id uuid.UUID) {
			b := make([]byte, index.DedupHeaderSize)
			chain := index.PutDedupHeader(b, 0)
			for off := uint64(1); off <= 600; off++ { // whole and verified, but other ids
				b = index.AppendDedupEntry(b, &chain, index.HashTxn(fmt.Sprintf("other-%d", off)), off)
			}
			require.NoError(t, os.WriteFile(filepath.Join(d.partitionDir(id), dedupFile), b, 0o644))
		}, []Kind{KindDedupDamaged}, ExitRepairable, ExitClean},
		{"a dedup.idx of an older version is rebuilt", func(d *testDir, id uuid.UUID) {
			v1 := append([]byte("CMBD\x01"), make([]byte, 27+16)...)
			require.NoError(t, os.WriteFile(filepath.Join(d.partitionDir(id), dedupFile), v1, 0o644))
		}, []Kind{KindDedupStale}, ExitRepairable, ExitClean},
		{"a dedup run that fails its page check is damage to the cache, rebuilt", func(d *testDir, id uuid.UUID) {
			var ents []index.RunEntry
			for off := uint64(1); off <= 100; off++ {
				ents = append(ents, index.RunEntry{Hash: index.HashTxn(fmt.Sprintf("run-%d", off)), Offset: off})
			}
			index.SortRunEntries(ents)
			run := filepath.Join(d.partitionDir(id), index.RunFileName(1, 100))
			require.NoError(t, os.WriteFile(run, index.EncodeRun(1, 100, ents), 0o644))
			d.flipBit(run, index.RunHeaderSize+5*index.RunEntrySize+2)
		}, []Kind{KindDedupDamaged}, ExitRepairable, ExitClean},
		{"an interrupted dedup run write is stale, removed", func(d *testDir, id uuid.UUID) {
			tmp := filepath.Join(d.partitionDir(id), index.RunFileName(1, 100)+".tmp")
			require.NoError(t, os.WriteFile(tmp, random[:40], 0o644))
		}, []Kind{KindDedupStale}, ExitRepairable, ExitClean},
		{"a cursor past the high-water mark is clamped", func(d *testDir, id uuid.UUID) {
			d.setCursor(id, "g", lease.State{Committed: 900})
		}, []Kind{KindCursorPastEnd}, ExitRepairable, ExitClean},
		{"a leased span past the high-water mark is dropped", func(d *testDir, id uuid.UUID) {
			d.setCursor(id, "g", lease.State{Committed: 100, Lease: lease.Lease{ID: [16]byte{1}, Start: 101, End: 950, ExpiresAtMicros: ts0}})
		}, []Kind{KindCursorPastEnd}, ExitRepairable, ExitClean},
		{"a damaged cursor snapshot needs a person", func(d *testDir, id uuid.UUID) {
			d.setCursor(id, "g", lease.State{Committed: 10})
			s, err := filepath.Glob(filepath.Join(d.root, dirCursor, "snapshot-*.v3.snap"))
			require.NoError(t, err)
			require.Len(t, s, 1)
			d.flipBit(s[0], 20)
		}, []Kind{KindJournalCorrupt}, ExitDamaged, ExitDamaged},
		{"a flipped bit in a sealed file needs a person", func(d *testDir, id uuid.UUID) {
			d.flipBit(d.segFiles(id)[1], 200)
		}, []Kind{KindCorruptSegment}, ExitDamaged, ExitClean}, // quarantined and listed in QUARANTINE: info after
		{"a flipped bit mid-way in the newest file is not a torn tail", func(d *testDir, id uuid.UUID) {
			f := d.segFiles(id)
			d.flipBit(f[len(f)-1], 100)
		}, []Kind{KindCorruptSegment}, ExitDamaged, ExitClean},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDir(t)
			id := d.writeLog(60, 10, 4096, ts0) // 600 records, 9 files
			require.GreaterOrEqual(t, len(d.segFiles(id)), 3)
			tc.damage(d, id)

			rep := d.run(ModeCheck)
			assert.ElementsMatch(t, tc.wantKinds, kinds(rep))
			assert.Equal(t, tc.wantExit, rep.ExitCode)

			dry := d.run(ModeDryRun)
			assert.Equal(t, kinds(rep), kinds(dry), "--dry-run reports what check reports")
			for _, f := range dry.Findings {
				assert.False(t, f.Repaired, "--dry-run repairs nothing")
			}

			fixed := d.run(ModeRepair)
			assert.Equal(t, tc.wantExit, fixed.ExitCode, "--repair exit code")
			for _, f := range fixed.Findings {
				if f.Severity == SeverityRepairable {
					assert.Truef(t, f.Repaired, "%s repaired (%s)", f.Kind, f.RepairError)
				}
			}
			again := d.run(ModeCheck)
			assert.Equalf(t, tc.afterRepair, again.ExitCode, "check after --repair: %v", kinds(again))
		})
	}
}

// TestSealedDamageReportsExactRange: a flipped bit is reported with the byte range
// of exactly the segment it is in and the offsets that segment held (issue 5).
func TestSealedDamageReportsExactRange(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	files := d.segFiles(id)
	bounds := segmentBounds(t, files[1])
	require.GreaterOrEqual(t, len(bounds), 3)
	seg := bounds[2]
	d.flipBit(files[1], seg[0]+(seg[1]-seg[0])/2)

	f := findOne(t, d.run(ModeCheck), KindCorruptSegment)
	assert.Equal(t, filepath.Join(dirPartitions, id.String(), filepath.Base(files[1])), f.File)
	assert.Equal(t, seg[0], f.StartByte)
	assert.Equal(t, seg[1], f.EndByte)
	firstOfFile := fileFirstOffset(t, files[1])
	assert.Equal(t, firstOfFile+20, f.FirstOffset, "third segment of the file")
	assert.Equal(t, firstOfFile+29, f.LastOffset)
	assert.Equal(t, id.String(), f.PartitionID)
	assert.Equal(t, SeverityDamaged, f.Severity)
}

// TestRepairRebuildsOnlyTheDamagedIndex: --repair rewrites the one missing index and
// leaves every other file of the partition byte-identical.
func TestRepairRebuildsOnlyTheDamagedIndex(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	victim := strings.TrimSuffix(d.segFiles(id)[2], ".seg") + ".idx"
	before := readAll(t, d.partitionDir(id))
	require.NoError(t, os.Remove(victim))

	rep := d.run(ModeRepair)
	assert.Equal(t, []Kind{KindIndexMissing}, kinds(rep))
	after := readAll(t, d.partitionDir(id))
	for name, b := range before {
		if name == filepath.Base(victim) {
			continue
		}
		assert.Equalf(t, b, after[name], "%s untouched", name)
	}
	require.Contains(t, after, filepath.Base(victim))
	assert.Equal(t, ExitClean, d.run(ModeCheck).ExitCode)
}

// TestRepairClampsCursorAndKeepsOthers: the clamp moves only the cursor past the
// high-water mark, to the high-water mark, and drops its lease.
func TestRepairClampsCursorAndKeepsOthers(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(10, 10, 1<<20, ts0) // offsets 1..100
	d.setCursor(id, "ahead", lease.State{Committed: 150, Lease: lease.Lease{ID: [16]byte{9}, Start: 151, End: 160}})
	d.setCursor(id, "fine", lease.State{Committed: 40})

	f := findOne(t, d.run(ModeRepair), KindCursorPastEnd)
	assert.Equal(t, "ahead", f.Group)
	assert.Equal(t, uint64(101), f.FirstOffset)
	assert.True(t, f.Repaired)

	e, _, err := cursor.Open(filepath.Join(d.root, dirCursor), cursor.Options{NoSync: true})
	require.NoError(t, err)
	defer e.Close()
	got, ok := e.Get(cursor.Key{Partition: id, Group: "ahead"})
	require.True(t, ok)
	assert.Equal(t, lease.State{Committed: 100}, got)
	got, ok = e.Get(cursor.Key{Partition: id, Group: "fine"})
	require.True(t, ok)
	assert.Equal(t, uint64(40), got.Committed)
}

// TestQuarantineKeepsTheDamagedBytes: --repair never deletes: the damaged newest-file
// tail is copied under quarantine/ byte for byte and listed in the manifest.
func TestQuarantineKeepsTheDamagedBytes(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	files := d.segFiles(id)
	newest := files[len(files)-1]
	d.flipBit(newest, 100)
	orig, err := os.ReadFile(newest)
	require.NoError(t, err)

	rep := d.run(ModeRepair)
	f := findOne(t, rep, KindCorruptSegment)
	assert.Equal(t, ExitDamaged, rep.ExitCode)
	q, err := readQuarantine(d.root)
	require.NoError(t, err)
	require.Len(t, q, 1)
	kept, err := os.ReadFile(filepath.Join(d.root, q[0].Moved))
	require.NoError(t, err)
	assert.Equal(t, orig[f.StartByte:], kept)
	st, err := os.Stat(newest)
	require.NoError(t, err)
	assert.Equal(t, f.StartByte, st.Size(), "the log is cut where the damage starts")

	again := d.run(ModeCheck)
	assert.Equal(t, ExitClean, again.ExitCode)
	assert.Equal(t, []Kind{KindQuarantined}, kinds(again))
}

// TestLiveServerLock: fsck refuses a directory whose LOCK a live process holds,
// unless --force for a read-only check; --repair never runs under a live server.
func TestLiveServerLock(t *testing.T) {
	d := newTestDir(t)
	d.writeLog(3, 2, 1<<20, ts0)
	lf, err := os.OpenFile(filepath.Join(d.root, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lf.Close()
	require.NoError(t, unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB))

	for _, tc := range []struct {
		name  string
		opts  Options
		wantE error
	}{
		{"check refuses", Options{Mode: ModeCheck}, ErrLocked},
		{"repair refuses", Options{Mode: ModeRepair}, ErrLocked},
		{"repair refuses even forced", Options{Mode: ModeRepair, Force: true}, ErrLocked},
		{"forced check runs", Options{Mode: ModeCheck, Force: true}, nil},
		{"forced dry run runs", Options{Mode: ModeDryRun, Force: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(d.root, tc.opts)
			if tc.wantE != nil {
				assert.True(t, errors.Is(err, tc.wantE), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.True(t, rep.Forced)
			assert.Equal(t, ExitClean, rep.ExitCode)
		})
	}
}

func TestNotADataDir(t *testing.T) {
	_, err := Run(t.TempDir(), Options{})
	assert.ErrorIs(t, err, ErrNotDataDir)
	_, err = Run(filepath.Join(t.TempDir(), "missing"), Options{})
	assert.ErrorIs(t, err, ErrNotDataDir)
}

func fileFirstOffset(t *testing.T, segPath string) uint64 {
	t.Helper()
	files, err := listSegFiles(filepath.Dir(segPath))
	require.NoError(t, err)
	for _, f := range files {
		if f.Name == filepath.Base(segPath) {
			return f.FirstOffset
		}
	}
	t.Fatalf("%s not found", segPath)
	return 0
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = b
	}
	return out
}
