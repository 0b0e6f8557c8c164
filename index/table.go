package index

import "sync/atomic"

// Table is a compact open-addressing multimap from a transaction-id hash to
// offsets: 16 bytes a slot, load factor ≤ 3/4. Equal hashes (duplicates or
// collisions) each get their own slot; Lookup visits all of them so the
// caller can verify which one really holds the transaction id.
//
// Growing is incremental: the doubled table takes new entries at once and
// every Insert moves migrateStep slots of the old one, so no single Insert
// re-inserts millions of entries (a partition with 3 M transaction ids held
// its locks ~100 ms on the doubling Insert). Until the move is done, Lookup
// reads both tables.
type Table struct {
	keys []uint64 // 0 = empty slot; a hash of 0 is stored as 1
	vals []uint64
	n    int // entries in keys/vals

	// The table being emptied into keys/vals (nil when none): slots below
	// mig were moved already, the oldLeft entries at mig or above were not.
	oldK, oldV []uint64
	mig        int
	oldLeft    int
}

// migrateStep is how many old slots each Insert moves. The old table holds
// at most 3/4 of its S slots as entries and the new one fills up after 3/4·S
// more, so any step above 4/3 finishes in time; 8 keeps Lookups on two
// tables short-lived.
const migrateStep = 8

// Len is the number of entries.
func (t *Table) Len() int { return t.n + t.oldLeft }

// Reserve grows the table so that n more entries fit without growing.
func (t *Table) Reserve(n int) {
	for (t.Len()+n)*4 > len(t.keys)*3 {
		t.grow()
	}
}

// Insert adds (hash, offset).
func (t *Table) Insert(hash, offset uint64) {
	if (t.Len()+1)*4 > len(t.keys)*3 {
		t.grow()
	}
	t.migrate(migrateStep)
	t.insert(fix(hash), offset)
}

func fix(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

func (t *Table) insert(h, off uint64) {
	mask := uint64(len(t.keys) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if t.keys[i] == 0 {
			t.keys[i], t.vals[i] = h, off
			t.n++
			return
		}
	}
}

// grow starts moving into a table twice the size (finishing any move still
// under way first: at most one old table at a time).
func (t *Table) grow() {
	t.migrate(len(t.oldK))
	size := 2 * len(t.keys)
	if size < 16 {
		size = 16
	}
	t.oldK, t.oldV, t.mig, t.oldLeft = t.keys, t.vals, 0, t.n
	t.keys, t.vals, t.n = make([]uint64, size), make([]uint64, size), 0
	if t.oldLeft == 0 {
		t.oldK, t.oldV = nil, nil
	}
}

// migrate moves up to slots old slots into the current table.
func (t *Table) migrate(slots int) {
	if t.oldK == nil {
		return
	}
	end := min(t.mig+slots, len(t.oldK))
	for ; t.mig < end; t.mig++ {
		if k := t.oldK[t.mig]; k != 0 {
			t.insert(k, t.oldV[t.mig])
			t.oldLeft--
		}
	}
	if t.mig == len(t.oldK) {
		t.oldK, t.oldV, t.mig, t.oldLeft = nil, nil, 0, 0
	}
}

// Lookup calls fn with each offset stored under hash, newest slot order not
// guaranteed, until fn returns false.
func (t *Table) Lookup(hash uint64, fn func(offset uint64) bool) {
	if t.Len() == 0 {
		return
	}
	h := fix(hash)
	mask := uint64(len(t.keys) - 1)
	for i := h & mask; t.keys[i] != 0; i = (i + 1) & mask {
		if t.keys[i] == h && !fn(t.vals[i]) {
			return
		}
	}
	if t.oldK == nil {
		return
	}
	// Old slots below mig were moved (and seen above); the probe chain still
	// runs through them, so they are skipped, not ended on.
	mask = uint64(len(t.oldK) - 1)
	for i := h & mask; t.oldK[i] != 0; i = (i + 1) & mask {
		if int(i) >= t.mig && t.oldK[i] == h && !fn(t.oldV[i]) {
			return
		}
	}
}

// Bytes is the table's memory footprint.
func (t *Table) Bytes() int { return 16 * (len(t.keys) + len(t.oldK)) }

// prefetchSink keeps Prefetch's loads from being optimised away (one atomic store a batch).
var prefetchSink atomic.Uint64

// Prefetch touches the home slot of each hash before a run of Lookups. In a table larger than
// the CPU caches every Lookup is a cache (and TLB) miss; issued back to back with no
// dependency between them, the misses of a whole batch overlap instead of being paid one after
// the other (a push of 100 messages looks up 100 transaction ids).
func (t *Table) Prefetch(hashes []uint64) {
	if t.Len() == 0 {
		return
	}
	mask := uint64(len(t.keys) - 1)
	var s uint64
	for _, h := range hashes {
		s ^= t.keys[fix(h)&mask]
	}
	prefetchSink.Store(s)
}

// Reset empties the table and keeps its slots, so a table filled to the
// same size over and over (the active run of package segment) allocates
// once.
func (t *Table) Reset() {
	clear(t.keys)
	clear(t.vals)
	t.n = 0
	t.oldK, t.oldV, t.mig, t.oldLeft = nil, nil, 0, 0
}

// Each calls fn with every (hash, offset) entry, in no particular order.
// A hash of 0 comes back as 1 (see fix): Lookup treats them alike.
func (t *Table) Each(fn func(hash, offset uint64)) {
	for i, k := range t.keys {
		if k != 0 {
			fn(k, t.vals[i])
		}
	}
	for i := t.mig; i < len(t.oldK); i++ {
		if k := t.oldK[i]; k != 0 {
			fn(k, t.oldV[i])
		}
	}
}
