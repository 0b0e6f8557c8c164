package index

// filterBlock is a blocked Bloom filter's 512-bit block (one cache line):
// every bit a key sets lies in one block, so a query costs one cache miss
// however large the filter is (KFilter).
type filterBlock [8]uint64

// filterSalts pick a key's bits within its block from its low 32 bits (odd
// multipliers: Apache Parquet's split block Bloom filter constants).
var filterSalts = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}
