package segment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fourFiles writes offsets 1-4, 5-8, 9-12, 13-16 (timestamps 100..400 µs), one
// segment file each, and closes the log.
func fourFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, _, err := Open(dir, Options{MaxFileBytes: 300})
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		_, err := l.Append(int64(100*(i+1)), recs(i*4, 4, 60))
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	return dir
}

// moveAside does what fsck --repair's quarantine does to a sealed file.
func moveAside(t *testing.T, dir string, base uint64) {
	t.Helper()
	q := t.TempDir()
	require.NoError(t, os.Rename(filepath.Join(dir, segName(base)), filepath.Join(q, segName(base))))
	require.NoError(t, os.Rename(filepath.Join(dir, idxName(base)), filepath.Join(q, idxName(base))))
}

func offsetsOf(msgs []Message) []uint64 {
	var out []uint64
	for _, m := range msgs {
		out = append(out, m.Offset)
	}
	return out
}

// Issue 5: a gap left by a quarantined sealed file opens only when the
// QUARANTINE marker covers all of it.
func TestOpenAcceptsOnlyGapsTheQuarantineMarkerCovers(t *testing.T) {
	cases := []struct {
		name   string
		moved  []uint64
		marker []OffsetRange
		ok     bool
	}{
		{"gap without a marker is refused", []uint64{5}, nil, false},
		{"gap covered by the marker opens", []uint64{5}, []OffsetRange{{5, 8}}, true},
		{"marker wider than the gap opens", []uint64{5}, []OffsetRange{{2, 10}}, true},
		{"gap partly covered is refused", []uint64{5}, []OffsetRange{{5, 7}}, false},
		{"marker for another range is refused", []uint64{5}, []OffsetRange{{9, 12}}, false},
		{"two adjacent files, one range each", []uint64{5, 9}, []OffsetRange{{9, 12}, {5, 8}}, true},
		{"two adjacent files, one range missing", []uint64{5, 9}, []OffsetRange{{5, 8}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := fourFiles(t)
			for _, b := range tc.moved {
				moveAside(t, dir, b)
			}
			for _, r := range tc.marker {
				require.NoError(t, AddQuarantined(dir, r, "test"))
			}
			l, _, err := Open(dir, Options{MaxFileBytes: 300})
			if !tc.ok {
				var ce *CorruptionError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, filepath.Join(dir, segName(1)), ce.File)
				assert.Equal(t, uint64(5), ce.FirstOffset)
				assert.Contains(t, ce.Reason, QuarantineFileName)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, uint64(1), l.FirstOffset())
			assert.Equal(t, uint64(17), l.NextOffset())
			require.NoError(t, l.Close())
		})
	}
}

// Issue 5: with the gap accepted, offsets stay where they are and reads, time
// lookups, dedup and appends step over it.
func TestQuarantinedGapIsSkipped(t *testing.T) {
	dir := fourFiles(t)
	moveAside(t, dir, 5)
	require.NoError(t, AddQuarantined(dir, OffsetRange{5, 8}, "quarantine/partitions/x/00000000000000000005.seg"))
	l, rep, err := Open(dir, Options{MaxFileBytes: 300})
	require.NoError(t, err)
	assert.False(t, rep.Repaired())
	defer l.Close()

	all := readAll(t, l, 1)
	assert.Equal(t, []uint64{1, 2, 3, 4, 9, 10, 11, 12, 13, 14, 15, 16}, offsetsOf(all))
	requireRecord(t, rec(8, 60), all[4]) // offset 9 holds record 8 (records are 0-based)

	var rb ReadBuffer
	for _, from := range []uint64{5, 6, 8} {
		msgs, err := l.Read(from, 2, 0, &rb)
		require.NoError(t, err)
		assert.Equal(t, []uint64{9, 10}, offsetsOf(msgs), "read from %d inside the gap", from)
	}
	msgs, err := l.Read(3, 4, 0, &rb)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 4, 9, 10}, offsetsOf(msgs), "a read across the gap")

	lookups := []struct {
		ts           int64
		atOrAfter    uint64
		lastAtOrBefr uint64
	}{
		{50, 1, 0},
		{100, 1, 4},
		{150, 9, 4}, // the segment stamped 200 is gone: the gap has no timestamps
		{200, 9, 4},
		{250, 9, 4},
		{300, 9, 12},
		{400, 13, 16},
		{500, 17, 16},
	}
	for _, lk := range lookups {
		assert.Equal(t, lk.atOrAfter, l.OffsetAtOrAfterTime(lk.ts), "OffsetAtOrAfterTime(%d)", lk.ts)
		assert.Equal(t, lk.lastAtOrBefr, l.LastOffsetAtOrBefore(lk.ts), "LastOffsetAtOrBefore(%d)", lk.ts)
	}

	_, _, ok, err := l.FindTransaction(rec(5, 60).TransactionID) // was offset 6
	require.NoError(t, err)
	assert.False(t, ok, "a quarantined record is not found")
	off, _, ok, err := l.FindTransaction(rec(9, 60).TransactionID)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(10), off)

	first, err := l.Append(600, recs(100, 2, 10))
	require.NoError(t, err)
	assert.Equal(t, uint64(17), first)
}

func TestQuarantineMarkerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rs, err := ReadQuarantine(dir)
	require.NoError(t, err)
	assert.Nil(t, rs)
	require.NoError(t, AddQuarantined(dir, OffsetRange{61, 120}, "moved to\nquarantine/a"))
	require.NoError(t, AddQuarantined(dir, OffsetRange{5, 5}, ""))
	rs, err = ReadQuarantine(dir)
	require.NoError(t, err)
	assert.Equal(t, []OffsetRange{{61, 120}, {5, 5}}, rs)
	b, err := os.ReadFile(filepath.Join(dir, QuarantineFileName))
	require.NoError(t, err)
	assert.Equal(t, "comb-quarantine v1\n61 120 moved to quarantine/a\n5 5\n", string(b))
	assert.NoFileExists(t, filepath.Join(dir, QuarantineFileName+".tmp"))

	require.ErrorIs(t, AddQuarantined(dir, OffsetRange{9, 3}, ""), ErrBadQuarantine)
	require.ErrorIs(t, AddQuarantined(dir, OffsetRange{0, 3}, ""), ErrBadQuarantine)
}

// A marker that does not parse makes Open refuse a gap rather than guess.
func TestMalformedQuarantineMarkerRefusesTheGap(t *testing.T) {
	cases := map[string]string{
		"wrong header":   "quarantine\n5 8\n",
		"one number":     "comb-quarantine v1\n5\n",
		"reversed range": "comb-quarantine v1\n8 5\n",
		"not a number":   "comb-quarantine v1\nfive eight\n",
		"empty":          "",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			dir := fourFiles(t)
			moveAside(t, dir, 5)
			require.NoError(t, os.WriteFile(filepath.Join(dir, QuarantineFileName), []byte(body), 0o644))
			_, _, err := Open(dir, Options{MaxFileBytes: 300})
			require.ErrorIs(t, err, ErrBadQuarantine)
			_, err = ReadQuarantine(dir)
			require.ErrorIs(t, err, ErrBadQuarantine)
			require.ErrorIs(t, AddQuarantined(dir, OffsetRange{5, 8}, ""), ErrBadQuarantine, "a bad marker is left alone")
		})
	}
}

func TestQuarantineCovers(t *testing.T) {
	rs := []OffsetRange{{10, 20}, {1, 4}, {5, 9}, {30, 40}}
	cases := []struct {
		first, last uint64
		want        bool
	}{
		{1, 20, true}, {3, 3, true}, {12, 25, false}, {21, 29, false}, {30, 40, true}, {35, 41, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, QuarantineCovers(rs, c.first, c.last), "%d-%d", c.first, c.last)
	}
}

func FuzzParseQuarantine(f *testing.F) {
	f.Add([]byte("comb-quarantine v1\n61 120 quarantine/a\n5 5\n"))
	f.Add([]byte("comb-quarantine v1\n# note\n\n1 18446744073709551615\n"))
	f.Add([]byte("comb-quarantine v1\n8 5\n"))
	f.Add([]byte("comb-quarantine"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := parseQuarantine(b)
		if err != nil {
			return
		}
		for _, r := range rs {
			if r.First == 0 || r.Last < r.First {
				t.Fatalf("accepted bad range %v", r)
			}
		}
	})
}

// A quarantined gap that ends at an empty newest file (a crash between creating it
// and its first append): a read from inside the gap finds nothing, not an error.
// FuzzPlanSplit found it.
func TestReadAcrossAGapBeforeAnEmptyNewestFile(t *testing.T) {
	dir := fourFiles(t)
	require.NoError(t, os.Rename(filepath.Join(dir, segName(13)), filepath.Join(t.TempDir(), segName(13))))
	require.NoError(t, os.WriteFile(filepath.Join(dir, segName(17)), nil, 0o644))
	require.NoError(t, AddQuarantined(dir, OffsetRange{First: 13, Last: 16}, ""))
	l, _, err := Open(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, uint64(17), l.NextOffset())
	var rb ReadBuffer
	msgs, err := l.Read(13, 10, 0, &rb)
	require.NoError(t, err)
	assert.Empty(t, msgs)
	msgs, err = l.Read(9, 10, 0, &rb)
	require.NoError(t, err)
	assert.Equal(t, []uint64{9, 10, 11, 12}, offsetsOf(msgs))
	require.NoError(t, l.Close())
}
