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

// Issue 5: --repair moves a damaged sealed file aside and lists its offsets in the
// partition's QUARANTINE marker, so the server opens the log across the gap and the
// next check reports the range as info (exit 0), not damage.
func TestRepairedSealedFileLeavesAGapTheServerAccepts(t *testing.T) {
	d := newTestDir(t)
	id := d.writeLog(60, 10, 4096, ts0)
	files := d.segFiles(id)
	first, last := fileFirstOffset(t, files[1]), fileFirstOffset(t, files[2])-1
	d.flipBit(files[1], 200)

	_, _, err := segment.Open(d.partitionDir(id), segment.Options{})
	require.NoError(t, err, "sealed damage is found by reads, not by Open")
	rep := d.run(ModeRepair)
	assert.Equal(t, ExitDamaged, rep.ExitCode, "the run that finds the damage says so")
	assert.NoFileExists(t, files[1])

	marker, err := segment.ReadQuarantine(d.partitionDir(id))
	require.NoError(t, err)
	assert.Equal(t, []segment.OffsetRange{{First: first, Last: last}}, marker)

	l, _, err := segment.Open(d.partitionDir(id), segment.Options{})
	require.NoError(t, err, "the server's Open accepts the listed gap")
	assert.Equal(t, uint64(1), l.FirstOffset())
	assert.Equal(t, uint64(601), l.NextOffset())
	var rb segment.ReadBuffer
	msgs, err := l.Read(first, 1, 0, &rb)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, last+1, msgs[0].Offset, "a read from inside the gap continues after it")
	require.NoError(t, l.Close())

	again := d.run(ModeCheck)
	assert.Equal(t, ExitClean, again.ExitCode, "%v", kinds(again))
	gaps := findKind(again, KindOffsetGap)
	require.Len(t, gaps, 1)
	assert.Equal(t, SeverityInfo, gaps[0].Severity)
	assert.Contains(t, gaps[0].Detail, fmt.Sprintf("quarantined range %d..%d", first, last))
	assert.Equal(t, first, gaps[0].FirstOffset)
	assert.Equal(t, last, gaps[0].LastOffset)
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
