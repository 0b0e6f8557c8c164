package fsck

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/segment"
)

// findKind returns the findings of one kind.
func findKind(r *Report, k Kind) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}

// Issues 5 and 10: --repair rewrites a damaged sealed file as its good segments, keeps
// the original whole in quarantine and lists only the damaged segment's offsets in the
// partition's QUARANTINE marker, so the server opens the log across that gap, serves
// the rest of the file, and the next check reports the range as info (exit 0).
func TestRepairedSealedFileLeavesAGapTheServerAccepts(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	files := d.segFiles(id)
	first, next := fileFirstOffset(t, files[1]), fileFirstOffset(t, files[2])
	bounds := segmentBounds(t, files[1])
	d.flipBit(files[1], bounds[1][0]+100) // the file's second segment: offsets first+10 .. first+19
	orig, err := os.ReadFile(files[1])
	require.NoError(t, err)
	gap := segment.OffsetRange{First: first + 10, Last: first + 19}

	_, _, err = segment.Open(d.partitionDir(id), segment.Options{})
	require.NoError(t, err, "sealed damage is found by reads, not by Open")
	check := findOne(t, d.run(ModeCheck), KindCorruptSegment)
	assert.Contains(t, check.Repair, fmt.Sprintf("offsets %d-%d, %d-%d keep serving", first, first+9, first+20, next-1))
	rep := d.run(ModeRepair)
	assert.Equal(t, ExitDamaged, rep.ExitCode, "the run that finds the damage says so")
	after := d.segFiles(id)
	assert.Equal(t, len(files)+1, len(after), "the file became two")
	kept, err := os.ReadFile(filepath.Join(d.root, dirQuarantine, dirPartitions, id.String(), filepath.Base(files[1])))
	require.NoError(t, err)
	assert.Equal(t, orig, kept, "the original is kept whole")

	marker, err := segment.ReadQuarantine(d.partitionDir(id))
	require.NoError(t, err)
	assert.Equal(t, []segment.OffsetRange{gap}, marker)

	l, _, err := segment.Open(d.partitionDir(id), segment.Options{})
	require.NoError(t, err, "the server's Open accepts the listed gap")
	assert.Equal(t, uint64(1), l.FirstOffset())
	assert.Equal(t, uint64(601), l.NextOffset())
	var rb segment.ReadBuffer
	msgs, err := l.Read(gap.First, 1, 0, &rb)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, gap.Last+1, msgs[0].Offset, "a read from inside the gap continues after it")
	served := 0
	for from := uint64(1); ; {
		msgs, err := l.Read(from, 1000, 0, &rb)
		require.NoError(t, err)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			assert.Equal(t, fmt.Sprintf("tx-%d", m.Offset), m.TransactionID)
			served++
		}
		from = msgs[len(msgs)-1].Offset + 1
	}
	assert.Equal(t, 590, served, "every record but the damaged segment's 10 is served")
	require.NoError(t, l.Close())

	again := d.run(ModeCheck)
	assert.Equal(t, ExitClean, again.ExitCode, "%v", kinds(again))
	gaps := findKind(again, KindOffsetGap)
	require.Len(t, gaps, 1)
	assert.Equal(t, SeverityInfo, gaps[0].Severity)
	assert.Contains(t, gaps[0].Detail, fmt.Sprintf("quarantined range %d..%d", gap.First, gap.Last))
	assert.Equal(t, gap.First, gaps[0].FirstOffset)
	assert.Equal(t, gap.Last, gaps[0].LastOffset)
}

// An interrupted split (a crash between moving the original aside and renaming the
// good segments in) is reported and finished by the next --repair.
func TestInterruptedSplitIsFinished(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	files := d.segFiles(id)
	first, next := fileFirstOffset(t, files[1]), fileFirstOffset(t, files[2])
	bounds := segmentBounds(t, files[1])
	d.flipBit(files[1], bounds[1][0]+100)
	p, err := segment.PlanSplit(d.partitionDir(id), filepath.Base(files[1]))
	require.NoError(t, err)
	// What Apply leaves after step 3: copies beside the log, a pending marker line, the
	// original moved.
	for _, r := range p.Runs {
		b, err := os.ReadFile(files[1])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(fmt.Sprintf("%s/%020d.seg.split", d.partitionDir(id), r.FirstOffset), b[r.StartByte:r.EndByte], 0o644))
	}
	require.NoError(t, segment.AddQuarantined(d.partitionDir(id), segment.OffsetRange{First: first, Last: next - 1}, "split-pending "+filepath.Base(files[1])+" moved to elsewhere"))
	require.NoError(t, os.MkdirAll(filepath.Join(d.root, "elsewhere"), 0o755))
	require.NoError(t, os.Rename(files[1], filepath.Join(d.root, "elsewhere", "orig")))

	rep := d.run(ModeCheck)
	assert.Equal(t, ExitRepairable, rep.ExitCode, "%v", kinds(rep))
	findOne(t, rep, KindSplitPending)
	fixed := d.run(ModeRepair)
	assert.True(t, findOne(t, fixed, KindSplitPending).Repaired)
	again := d.run(ModeCheck)
	assert.Equal(t, ExitClean, again.ExitCode, "%v", kinds(again))
	marker, err := segment.ReadQuarantine(d.partitionDir(id))
	require.NoError(t, err)
	assert.Equal(t, []segment.OffsetRange{{First: first + 10, Last: first + 19}}, marker)
}

// A gap the manifest explains but the marker does not list (a repair made before the
// marker existed, or a crash between the two) is repairable: --repair adds it.
func TestQuarantineGapWithoutMarkerIsRepairable(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	d.flipBit(d.segFiles(id)[1], 200)
	d.run(ModeRepair)
	require.NoError(t, os.Remove(filepath.Join(d.partitionDir(id), segment.QuarantineFileName)))
	_, _, err := segment.Open(d.partitionDir(id), segment.Options{})
	require.ErrorIs(t, err, segment.ErrCorrupt, "without the marker the gap is refused")

	rep := d.run(ModeCheck)
	assert.Equal(t, ExitRepairable, rep.ExitCode, "%v", kinds(rep))
	gaps := findKind(rep, KindOffsetGap)
	require.Len(t, gaps, 1)
	assert.Equal(t, SeverityRepairable, gaps[0].Severity)

	fixed := d.run(ModeRepair)
	require.Len(t, findKind(fixed, KindOffsetGap), 1)
	assert.True(t, findKind(fixed, KindOffsetGap)[0].Repaired)
	assert.Equal(t, ExitClean, d.run(ModeCheck).ExitCode)
	_, _, err = segment.Open(d.partitionDir(id), segment.Options{})
	require.NoError(t, err)
}

// A gap nobody explains (a sealed file deleted by hand) stays damage, and so does a
// gap the marker covers only in part.
func TestUnexplainedGapStaysDamage(t *testing.T) {
	cases := []struct {
		name   string
		marker func(d *testDir, id uuid.UUID, first, last uint64)
	}{
		{"no marker, no manifest", func(*testDir, uuid.UUID, uint64, uint64) {}},
		{"marker covers part of the gap", func(d *testDir, id uuid.UUID, first, last uint64) {
			require.NoError(t, segment.AddQuarantined(d.partitionDir(id), segment.OffsetRange{First: first, Last: last - 1}, ""))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDir(t)
			id := d.writeLog(60, 10, 4096, ts0)
			files := d.segFiles(id)
			first, last := fileFirstOffset(t, files[1]), fileFirstOffset(t, files[2])-1
			require.NoError(t, os.Remove(files[1]))
			tc.marker(d, id, first, last)
			rep := d.run(ModeCheck)
			assert.Equal(t, ExitDamaged, rep.ExitCode)
			gaps := findKind(rep, KindOffsetGap)
			require.Len(t, gaps, 1)
			assert.Equal(t, SeverityDamaged, gaps[0].Severity)
		})
	}
}

// Issue 10: a torn tail's non-zero bytes are kept, not discarded: --repair (through
// segment.Open) copies them under quarantine/ before cutting, lists them in the
// manifest, and says whether they were an incomplete segment or a full-length one.
func TestTornTailRepairKeepsTheBytes(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(20, 10, 1<<20, ts0)
	files := d.segFiles(id)
	newest := files[len(files)-1]
	st, err := os.Stat(newest)
	require.NoError(t, err)
	garbage := append(make([]byte, 37), []byte("not a segment header, nor anything else at all; 0123456789")...)
	d.appendBytes(newest, garbage)

	check := findOne(t, d.run(ModeCheck), KindTornTail)
	assert.Contains(t, check.Detail, "torn write or damage to an acknowledged segment")
	kept := filepath.Join(dirQuarantine, dirPartitions, id.String(), fmt.Sprintf("%s.from-%d", filepath.Base(newest), st.Size()))
	assert.Contains(t, check.Repair, kept)

	rep := d.run(ModeRepair)
	f := findOne(t, rep, KindTornTail)
	assert.True(t, f.Repaired)
	assert.Contains(t, f.Repair, "the bytes cut were kept at "+kept)
	b, err := os.ReadFile(filepath.Join(d.root, kept))
	require.NoError(t, err)
	assert.Equal(t, garbage, b)
	after, err := os.Stat(newest)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), after.Size())

	again := d.run(ModeCheck)
	assert.Equal(t, ExitClean, again.ExitCode)
	q := findOne(t, again, KindQuarantined)
	assert.Equal(t, kept, q.File)
}
