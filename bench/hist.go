package bench

import (
	"fmt"
	"math/bits"
)

// Histogram is a latency histogram of microsecond values from 0 to histMaxMicros at 3
// significant digits: every value below 2,048 has a bucket of its own, and each power of two
// above is split into 1,024 equal buckets (a bucket is at most 1/1,024 of its values wide, so
// 0.1 % resolution). It is the geometry, and ValueAtQuantile and Max answer exactly what, an
// HdrHistogram of New(1, 60_000_000, 3) does (hist_test.go checks them against
// hdrhistogram-go): comb bench's figures did not move when it stopped linking that library, so
// that the server binary links no benchmark dependency (issue 26). Not safe for concurrent
// use: each worker keeps its own and Flush merges them.
type Histogram struct {
	counts []int64 // by bucket index (histIndex)
	total  int64
}

// Bucket geometry: subBuckets values of width 1 in bucket 0 (0..2047), then for each k ≥ 1
// the values [2^(10+k), 2^(11+k)) in halfSubBuckets buckets of width 2^k.
const (
	subBucketMagnitude = 11 // 2,048 = the power of two above 2 × 10^3 (3 significant digits)
	halfSubBuckets     = 1 << (subBucketMagnitude - 1)
)

// histLen is the number of buckets up to histMaxMicros.
var histLen = histIndex(histMaxMicros) + 1

// histIndex is v's bucket (v ≥ 0).
func histIndex(v int64) int {
	k := max(0, bits.Len64(uint64(v)|(1<<subBucketMagnitude-1))-subBucketMagnitude)
	return k<<(subBucketMagnitude-1) + int(v>>k)
}

// histHighest is the largest value of bucket i: what HdrHistogram's highestEquivalentValue
// reports for every value of that bucket.
func histHighest(i int) int64 {
	k := 0
	if i >= 2*halfSubBuckets {
		k = i>>(subBucketMagnitude-1) - 1
	}
	sub := int64(i - k<<(subBucketMagnitude-1))
	return sub<<k + 1<<k - 1
}

func newHist() *Histogram { return &Histogram{} }

// RecordValue counts one value. Errors: a value outside 0..histMaxMicros is not counted.
func (h *Histogram) RecordValue(v int64) error {
	if v < 0 || v > histMaxMicros {
		return fmt.Errorf("bench: latency %d µs outside 0..%d", v, int64(histMaxMicros))
	}
	if h.counts == nil {
		h.counts = make([]int64, histLen)
	}
	h.counts[histIndex(v)]++
	h.total++
	return nil
}

// Merge adds from's counts to h.
func (h *Histogram) Merge(from *Histogram) {
	if from.total == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]int64, histLen)
	}
	for i, c := range from.counts {
		h.counts[i] += c
	}
	h.total += from.total
}

// TotalCount is the number of values counted.
func (h *Histogram) TotalCount() int64 { return h.total }

// ValueAtQuantile is the largest value of the bucket holding the q-th percentile (q in
// 0..100; rank rounded half up, at least the first value, at most the last); 0 when empty.
func (h *Histogram) ValueAtQuantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 100)
	rank := q/100*float64(h.total) + 0.5
	want := int64(rank)
	switch {
	case !(rank >= 1):
		want = 1
	case rank >= float64(h.total):
		want = h.total
	}
	var seen int64
	for i, c := range h.counts {
		if seen += c; c > 0 && seen >= want {
			return histHighest(i)
		}
	}
	return 0
}

// Max is the largest value of the highest bucket counted; 0 when empty.
func (h *Histogram) Max() int64 {
	for i := len(h.counts) - 1; i >= 0; i-- {
		if h.counts[i] > 0 {
			return histHighest(i)
		}
	}
	return 0
}
