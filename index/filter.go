package index

import (
	"math"
	"math/bits"
	"slices"
)

// Filter is a binary fuse filter (Graf and Lemire, "Binary Fuse Filters:
// Fast and Smaller Than Xor Filters", 2022) over the dedup keys (HashTxn) of
// one sealed run, with 8-bit fingerprints: it answers "certainly not in the
// run" or "maybe", never a false "no". It is built once from all its keys,
// which fits a run (immutable once written).
//
// Each key maps to three slots, one in each of three consecutive segments of
// the fingerprint array, and the filter holds it when the XOR of the three
// slots equals the key's fingerprint. Building finds an order in which every
// key owns a slot no later key touches ("peeling" the 3-hypergraph), then
// fills the slots in reverse. So a query costs three loads, usually from
// the same few cache lines, and the false-positive rate is 1/256 (0.39 %) at
// about 1.13 bytes a key for large runs (up to ~1.25 for a run of 12,288):
// a false positive costs the caller one page read, never a wrong answer.
//
// Safe for concurrent MayContain.
type Filter struct {
	seed        uint64
	segLen      uint32 // slots in a segment, a power of two
	segLenMask  uint32
	segCountLen uint32 // segments a key's first slot may fall in × segLen
	fp          []uint8
	all         bool // construction gave up: every key "maybe" (never seen; see BuildFilter)
}

// filterArity is the number of slots a key maps to.
const filterArity = 3

// BuildFilter returns the filter of keys. Equal keys are held once. Keys
// sorted ascending (a run's order) are used as they are; others are sorted
// on a copy first.
//
// Building can fail for a seed (the hypergraph does not peel); it retries
// with another seed, and after many failures with a larger array. Every
// filter is checked against all its keys before it is returned; in the
// (unobserved) case that no attempt passes, it returns a filter that
// answers "maybe" to everything, which costs reads but loses nothing.
func BuildFilter(keys []uint64) *Filter {
	if !slices.IsSorted(keys) {
		keys = slices.Clone(keys)
		slices.Sort(keys)
	}
	keys = slices.Compact(slices.Clone(keys))
	n := len(keys)
	if n == 0 {
		return &Filter{}
	}
	segLen, arrayLen := filterSize(n)
	var acc []slotAcc
	var order []uint64 // peeled keys (mixed hashes), in peeling order
	var owner []uint32 // the slot each peeled key owns
	var queue []uint32
	mixed, byTop := make([]uint64, 0, n), make([]uint64, n)
	seed := uint64(0x9e3779b97f4a7c15)
	for attempt := 0; attempt < 64; attempt++ {
		if attempt > 0 && attempt%8 == 0 {
			arrayLen += segLen // a few seeds failed: more room
		}
		seed = splitmix(seed)
		f := &Filter{seed: seed, segLen: segLen, segLenMask: segLen - 1}
		f.segCountLen = arrayLen - (filterArity-1)*segLen
		if cap(acc) < int(arrayLen) {
			acc = make([]slotAcc, arrayLen)
		}
		acc = acc[:arrayLen]
		clear(acc)
		// A key's first slot grows with its mixed hash: visiting the keys in
		// that order walks the slots nearly in sequence instead of at random
		// (a large run's slots are far beyond the CPU caches).
		mixed, byTop = mixed[:0], byTop[:n]
		for _, k := range keys {
			mixed = append(mixed, mix(k, seed))
		}
		sortByTop(mixed, byTop)
		for _, m := range byTop {
			for _, s := range f.slots(m) {
				acc[s].count++
				acc[s].xor ^= m
			}
		}
		queue = queue[:0]
		for s := range acc {
			if acc[s].count == 1 {
				queue = append(queue, uint32(s))
			}
		}
		order, owner = order[:0], owner[:0]
		for len(queue) > 0 {
			s := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if acc[s].count != 1 {
				continue
			}
			m := acc[s].xor
			order, owner = append(order, m), append(owner, s)
			for _, t := range f.slots(m) {
				acc[t].count--
				acc[t].xor ^= m
				if acc[t].count == 1 {
					queue = append(queue, t)
				}
			}
		}
		if len(order) != n {
			continue
		}
		f.fp = make([]uint8, arrayLen)
		for i := len(order) - 1; i >= 0; i-- {
			m, s := order[i], owner[i]
			sl := f.slots(m)
			f.fp[s] = 0
			f.fp[s] = fingerprint(m) ^ f.fp[sl[0]] ^ f.fp[sl[1]] ^ f.fp[sl[2]]
		}
		if f.holdsAll(keys) {
			return f
		}
	}
	return &Filter{all: true}
}

// slotAcc is what building knows of a slot: how many unpeeled keys map to
// it and the XOR of their mixed hashes (the key itself once only one is left).
// One struct, so a key's update of a slot is one cache miss, not two.
type slotAcc struct {
	xor   uint64
	count uint32
}

// filterSize picks the segment length and array length for n keys (n ≥ 1):
// segments grow with n (so a key's slots stay close together) and the array
// is ~1.125 n slots for large n, more for small n, where peeling needs room.
func filterSize(n int) (segLen, arrayLen uint32) {
	lg := math.Log(float64(n))
	segLen = 1 << min(18, max(2, int(math.Floor(lg/math.Log(3.33)+2.25))))
	factor := 1.125
	if n > 1 {
		factor = max(factor, 0.875+0.25*math.Log(1e6)/lg)
	} else {
		factor = 4
	}
	capacity := uint32(math.Round(float64(n) * factor))
	segCount := (capacity + segLen - 1) / segLen
	if segCount < filterArity {
		segCount = filterArity
	}
	return segLen, segCount * segLen
}

// sortByTop writes src into dst (as long) ordered by the top bits of each
// value (a counting sort on up to 16 bits: close enough to sorted for cache
// locality, two sequential passes).
func sortByTop(src, dst []uint64) {
	shift := 64 - min(16, max(1, bits.Len(uint(len(src)))))
	counts := make([]int, 1<<(64-shift)+1)
	for _, v := range src {
		counts[v>>shift+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	for _, v := range src {
		dst[counts[v>>shift]] = v
		counts[v>>shift]++
	}
}

func (f *Filter) holdsAll(keys []uint64) bool {
	for _, k := range keys {
		if !f.MayContain(k) {
			return false
		}
	}
	return true
}

// slots returns the key's three slots, one in each of three consecutive
// segments, from its mixed hash m.
func (f *Filter) slots(m uint64) [filterArity]uint32 {
	hi, _ := bits.Mul64(m, uint64(f.segCountLen))
	h0 := uint32(hi)
	h1 := (h0 + f.segLen) ^ (uint32(m>>18) & f.segLenMask)
	h2 := (h0 + 2*f.segLen) ^ (uint32(m) & f.segLenMask)
	return [filterArity]uint32{h0, h1, h2}
}

// mix spreads a key with the seed (the murmur3 64-bit finalizer).
func mix(k, seed uint64) uint64 {
	h := k + seed
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// splitmix steps a seed (splitmix64).
func splitmix(s uint64) uint64 {
	s += 0x9e3779b97f4a7c15
	z := s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func fingerprint(m uint64) uint8 { return uint8(m ^ (m >> 32)) }

// MayContain reports whether key h may be in the filter (false: it is not).
func (f *Filter) MayContain(h uint64) bool {
	if f.all {
		return true
	}
	if len(f.fp) == 0 {
		return false
	}
	m := mix(h, f.seed)
	s := f.slots(m)
	return fingerprint(m) == f.fp[s[0]]^f.fp[s[1]]^f.fp[s[2]]
}

// Bytes is the filter's memory footprint (its fingerprint array).
func (f *Filter) Bytes() int { return len(f.fp) }
