package broker

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prometheus histograms are cumulative and never go down: a second snapshot
// with no new syncs reports the same counts, and new syncs add to them.
func TestSyncHistogramIsCumulative(t *testing.T) {
	require.Len(t, SyncBucketsMicros, numSyncBuckets-1)
	var h syncHist
	for _, us := range []int64{40, 190, 300, 2000000} {
		h.observe(us)
	}
	first := h.snapshot()
	assert.Equal(t, uint64(4), first.Count)
	assert.Equal(t, int64(2000530), first.SumMicros)
	assert.Equal(t, uint64(1), first.Counts[0], "≤ 50 µs")
	assert.Equal(t, uint64(2), first.Counts[2], "≤ 250 µs")
	assert.Equal(t, uint64(3), first.Counts[len(first.Counts)-1], "≤ 1 s: the 2 s sample is only in +Inf (Count)")
	assert.Equal(t, first, h.snapshot(), "no new syncs: same counts")

	h.observe(60)
	more := h.snapshot()
	assert.Equal(t, uint64(5), more.Count)
	assert.Equal(t, uint64(1), more.Counts[0])
	assert.Equal(t, uint64(2), more.Counts[1], "≤ 100 µs: 40 and 60")
}

// issue 10: every sync is counted, not a sample of the first 4,096 between
// two scrapes, also when syncs race the scrapes.
func TestSyncHistogramCountsEverySync(t *testing.T) {
	var h syncHist
	const writers, each = 8, 10_000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.observe(int64(w*each+i) % 3000)
			}
		}()
	}
	var last uint64
	for range 100 {
		s := h.snapshot()
		require.GreaterOrEqual(t, s.Count, last, "monotonic")
		require.LessOrEqual(t, s.Counts[len(s.Counts)-1], s.Count)
		last = s.Count
	}
	wg.Wait()
	s := h.snapshot()
	assert.Equal(t, uint64(writers*each), s.Count)
}
