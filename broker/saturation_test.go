package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSchedSaturated(t *testing.T) {
	// Buckets: [0, 100 µs), [100 µs, 1 ms), [1 ms, 10 ms), [10 ms, +Inf).
	buckets := []float64{0, 100e-6, 1e-3, 10e-3, 1e9}
	for _, c := range []struct {
		name   string
		counts []uint64
		want   bool
	}{
		{"no events", []uint64{0, 0, 0, 0}, false},
		{"long-poll run: waits under 1 ms", []uint64{80, 100, 1, 0}, false},
		{"just under 5 % at 1 ms or more", []uint64{50, 46, 3, 1}, false},
		{"5 % at 1 ms or more", []uint64{50, 45, 4, 1}, true},
		{"e2e run at 100,000 msg/s", []uint64{40, 45, 12, 3}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, schedSaturated(c.counts, buckets))
		})
	}
}

// The real histogram reads: the first read keeps the counts as the baseline
// the next one subtracts.
func TestCPUSaturationReads(t *testing.T) {
	var s cpuSaturation
	s.saturated()
	h := s.samples[0].Value.Float64Histogram()
	assert.Len(t, s.prev, len(h.Counts))
	assert.Greater(t, s.next.Load(), int64(0), "the next read is scheduled")
}
