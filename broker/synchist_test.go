package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Prometheus histograms are cumulative and never go down: a second Stats call
// with no new syncs reports the same counts, and new samples add to them.
func TestSyncHistogramIsCumulative(t *testing.T) {
	var h syncHist
	first := h.add([]int64{40, 190, 300, 2000000})
	assert.Equal(t, uint64(4), first.Count)
	assert.Equal(t, int64(2000530), first.SumMicros)
	assert.Equal(t, uint64(1), first.Counts[0], "≤ 50 µs")
	assert.Equal(t, uint64(2), first.Counts[2], "≤ 250 µs")
	assert.Equal(t, uint64(3), first.Counts[len(first.Counts)-1], "≤ 1 s: the 2 s sample is only in +Inf (Count)")

	again := h.add(nil)
	assert.Equal(t, first, again, "no new syncs: same counts")

	more := h.add([]int64{60})
	assert.Equal(t, uint64(5), more.Count)
	assert.Equal(t, uint64(1), more.Counts[0])
	assert.Equal(t, uint64(2), more.Counts[1], "≤ 100 µs: 40 and 60")
}
