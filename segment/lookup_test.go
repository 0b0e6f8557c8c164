package segment

import (
	"math"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Seed 000: "subscriptionFrom=<ts>: just before the first segment written at
// or after that timestamp; if nothing is that recent, the current end".
func TestTimeIndexSemantics(t *testing.T) {
	// Segments (4 records each): ts 100 → 1-4, 200 → 5-8, 200 → 9-12,
	// 300 → 13-16, 400 → 17-20. MaxFileBytes 500 puts each segment in its own file
	// (every lookup crosses rotation); the large size keeps them all in one.
	stamps := []int64{100, 200, 200, 300, 400}
	cases := []struct {
		name            string
		ts              int64
		atOrAfter, upTo uint64
	}{
		{"before the first segment", 50, 1, 0},
		{"at the first segment", 100, 1, 4},
		{"between segments", 150, 5, 4},
		{"at a timestamp shared by two segments: the first of them", 200, 5, 12},
		{"just after a shared timestamp", 201, 13, 12},
		{"at a later segment", 300, 13, 16},
		{"at the last segment", 400, 17, 20},
		{"after the last segment: the end", 401, 21, 20},
		{"far future", math.MaxInt64, 21, 20},
		{"far past", math.MinInt64, 1, 0},
	}
	for _, layout := range []struct {
		name string
		max  int64
	}{{"one file", 1 << 20}, {"a file per segment", 500}} {
		fs := vfs.NewMem()
		l, _ := openMem(t, fs, Options{MaxFileBytes: layout.max})
		for i, ts := range stamps {
			_, err := l.Append(ts, recs(i*4, 4, 100))
			require.NoError(t, err)
		}
		if layout.max == 500 {
			require.Len(t, l.files, 5)
		}
		reopened := func() *Log {
			require.NoError(t, l.Close())
			l2, _ := openMem(t, fs, Options{MaxFileBytes: layout.max})
			return l2
		}
		for _, phase := range []string{"live", "reopened"} {
			if phase == "reopened" {
				l = reopened()
			}
			for _, c := range cases {
				t.Run(layout.name+"/"+phase+"/"+c.name, func(t *testing.T) {
					assert.Equal(t, c.atOrAfter, l.OffsetAtOrAfterTime(c.ts))
					assert.Equal(t, c.upTo, l.LastOffsetAtOrBefore(c.ts))
				})
			}
		}
		require.NoError(t, l.Close())
	}
}

func TestTimeIndexAfterRetention(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 500})
	for i, ts := range []int64{100, 200, 300} {
		_, err := l.Append(ts, recs(i*4, 4, 100))
		require.NoError(t, err)
	}
	n, _, err := l.DeleteFilesBefore(5)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, uint64(5), l.OffsetAtOrAfterTime(50), "before everything retained: FirstOffset")
	assert.Equal(t, uint64(4), l.LastOffsetAtOrBefore(150), "none retained at or before: FirstOffset-1")
	assert.Equal(t, uint64(8), l.LastOffsetAtOrBefore(250))
}

func TestTimeIndexEmptyLog(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	assert.Equal(t, uint64(1), l.OffsetAtOrAfterTime(0))
	assert.Equal(t, uint64(0), l.LastOffsetAtOrBefore(0))
	assert.Equal(t, int64(0), l.LastTimestamp())
}
