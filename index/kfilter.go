package index

import (
	"math/bits"
	"sync/atomic"
)

// KFilter is a blocked Bloom filter whose size a key and number of bits a
// key (k, 1..8) are chosen by the caller: a key sets k bits of one 512-bit
// block (one cache line), so a query costs one cache miss however large the
// filter is. The dedup index (segment/dedup) sizes its per-partition filter
// and its per-run filters, the latter consulted only after the partition's
// said "maybe", with its own bits a key and k (segment/dedup/global.go,
// run.go).
//
// seed rotates the key before use, so that two filters over the same keys
// (the partition's and a run's) pick independent blocks and bits and their
// false positives do not coincide. Not safe for concurrent Add;
// MayContain is safe once adds are done.
type KFilter struct {
	blocks []filterBlock
	k      int
	seed   int
}

// NewKFilter returns an empty filter sized for keys keys at bitsPerKey
// bits each (at least one block), setting k bits a key (clamped to 1..8),
// with keys rotated left by seed bits.
func NewKFilter(keys int, bitsPerKey float64, k, seed int) *KFilter {
	blocks := max(1, int((float64(keys)*bitsPerKey+511)/512))
	return &KFilter{blocks: make([]filterBlock, blocks), k: min(max(k, 1), 8), seed: seed}
}

func (f *KFilter) at(h uint64) (*filterBlock, uint32) {
	h = bits.RotateLeft64(h, f.seed)
	return &f.blocks[(h>>32)*uint64(len(f.blocks))>>32], uint32(h)
}

// Add adds key h.
func (f *KFilter) Add(h uint64) {
	b, x := f.at(h)
	for i := range f.k {
		p := (x * filterSalts[i]) >> 23 // 0..511
		b[p>>6] |= 1 << (p & 63)
	}
}

// MayContain reports whether h may have been added (false: it never was).
func (f *KFilter) MayContain(h uint64) bool {
	b, x := f.at(h)
	for i := range f.k {
		p := (x * filterSalts[i]) >> 23
		if b[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
	}
	return true
}

// Prefetch touches the block of each hash before a run of MayContain calls,
// so that the cache misses of a batch overlap instead of being paid one
// after the other (as Table.Prefetch).
func (f *KFilter) Prefetch(hashes []uint64) {
	var s uint64
	for _, h := range hashes {
		b, _ := f.at(h)
		s ^= b[0]
	}
	kfilterSink.Store(s)
}

var kfilterSink atomic.Uint64

// Bytes is the filter's memory footprint.
func (f *KFilter) Bytes() int { return 64 * len(f.blocks) }
