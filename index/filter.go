package index

// Filter is a blocked Bloom filter over dedup keys (HashTxn), built for one
// sealed run: it answers "certainly not in the run" or "maybe", never a
// false "no". A key sets one bit in each of the 8 words of one 512-bit
// block (one cache line), so a query costs one cache miss however large the
// filter is: the split block Bloom filter of Apache Parquet's format, with
// 64-bit words.
//
// At FilterBitsPerKey bits a key its false-positive rate is about 1 %
// (TestFilterFalsePositiveRate measures it); a false positive costs the
// caller one page read of the run, never a wrong answer.
//
// Not safe for concurrent Add; MayContain is safe once adds are done.
type Filter struct {
	blocks []filterBlock
}

type filterBlock [8]uint64

// FilterBitsPerKey is the filter's size a key: 1.25 bytes, inside issue 14's
// budget of 2 bytes a stored message.
const FilterBitsPerKey = 10

// filterSalts pick the bit of each word from the key's low 32 bits (odd
// multipliers: Parquet's split block Bloom filter constants).
var filterSalts = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

// NewFilter returns an empty filter sized for keys keys (at least one
// 64-byte block).
func NewFilter(keys int) *Filter {
	blocks := max(1, (keys*FilterBitsPerKey+511)/512)
	return &Filter{blocks: make([]filterBlock, blocks)}
}

// block picks the key's block from its high 32 bits (multiply-shift: any
// number of blocks, no power of two needed).
func (f *Filter) block(h uint64) *filterBlock {
	return &f.blocks[(h>>32)*uint64(len(f.blocks))>>32]
}

// Add adds key h.
func (f *Filter) Add(h uint64) {
	b := f.block(h)
	x := uint32(h)
	for i := range b {
		b[i] |= 1 << ((x * filterSalts[i]) >> 26)
	}
}

// MayContain reports whether h may have been added (false: it never was).
func (f *Filter) MayContain(h uint64) bool {
	b := f.block(h)
	x := uint32(h)
	for i := range b {
		if b[i]&(1<<((x*filterSalts[i])>>26)) == 0 {
			return false
		}
	}
	return true
}

// Bytes is the filter's memory footprint.
func (f *Filter) Bytes() int { return 64 * len(f.blocks) }
