package index

import "sort"

// Entries is a read-only view of n valid, consecutive encoded entries.
type Entries []byte

// Len is the number of entries.
func (es Entries) Len() int { return len(es) / EntrySize }

// At decodes entry i (which ValidEntries already checked).
func (es Entries) At(i int) Entry {
	e, _ := DecodeEntry(es[i*EntrySize:])
	return e
}

// FindOffset returns the index of the entry holding offset off, or -1 when
// off is before the first entry or after the last one. O(log n).
func (es Entries) FindOffset(off uint64) int {
	n := es.Len()
	if n == 0 {
		return -1
	}
	// first entry whose base > off, minus one
	i := sort.Search(n, func(i int) bool { return es.base(i) > off }) - 1
	if i < 0 || off > es.At(i).Last() {
		return -1
	}
	return i
}

// FirstAtOrAfterTime returns the index of the first entry whose timestamp is
// ≥ tsMicros, or Len() when none is. Timestamps never decrease along a log
// (package segment clamps them), so this is a binary search.
func (es Entries) FirstAtOrAfterTime(tsMicros int64) int {
	return sort.Search(es.Len(), func(i int) bool { return es.ts(i) >= tsMicros })
}

func (es Entries) base(i int) uint64 {
	b := es[i*EntrySize:]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func (es Entries) ts(i int) int64 {
	b := es[i*EntrySize+16:]
	return int64(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
}
