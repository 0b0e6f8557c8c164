package dedup

import (
	"github.com/combmq/comb/index"
)

// The partition's filter (issue 23: dedup at one probe per id). Every id of
// every sealed run is also in one filter of the whole partition, so a
// lookup of an id the partition never held (the common case: a push of new
// messages) costs one probe of one cache line, however many runs there are.
// Only the few ids it answers "maybe" for (true duplicates and ~9 % false
// positives) go on to the runs' own filters, which then need only 5 bits
// an id instead of 10. Per-run filters alone cost a probe (a cache miss in
// a filter larger than the caches) per run per id: 700 probes for a push
// of 100 into a partition of 10 M ids in 7 runs, against ~160 here, at the
// same memory (BenchmarkFind100: 81 → 36 µs of CPU a batch).
//
// What it does not change: a false positive of a run's filter still costs
// a page read (a pread and a CRC-32C of 4 KiB, ~2 µs), and their number
// follows the filters' bits an id over all runs (the two filters' false
// positives multiply, as one filter of their summed bits would): ~0.8 %
// a run an id, so ~6 page reads a batch at 7 runs. Going below that, or
// below 10 bits an id, needs a structure that says which run holds an id
// (docs/format.md 4: the next step).
//
// The filter only grows: merges and retention keep its ids or drop some
// (a dropped id costs a false positive at most, never a wrong answer). It
// is sized for globalHeadroom times the ids of the runs when built; once
// more ids than that were added, a background job (merge.go) builds it
// again from the run files, sized for the ids they hold then, while
// lookups use the old one; ids sealed meanwhile are added to both.
//
// Invariant (never a missed duplicate): every entry of every run in memory
// is in d.global. Seals, the load and a run rebuilt from the segments add
// their entries; merges and rewrites write only entries of runs already in it.

const (
	// globalBitsPerKey and globalK size the partition's filter: ~9 %
	// false positives when full (index.TestKFilterFalsePositiveRate).
	globalBitsPerKey = 5.0
	globalK          = 3
	// globalHeadroom is the ids a (re)built filter has room for, over
	// those it is built with: each rebuild reads every run file once, so
	// a partition at a steady size reads each id 1/(headroom-1) = 4 times
	// over its life (a sequential read of 16 bytes, against ~9 rewrites
	// by the merges), and the filter holds 5 to 6.25 bits a retained id.
	globalHeadroom = 1.25
	// runFilterBits and runFilterK size a run's own filter: ~9 % false
	// positives, asked only for the ids the partition's filter let through.
	runFilterBits = 5.0
	runFilterK    = 3
	// runFilterSeed rotates the keys of a run's filter away from the
	// partition's, so their false positives are independent.
	runFilterSeed = 32
)

// globalMin is the fewest ids a partition's filter is sized for.
func (d *Index) globalMin() int { return 2 * d.cfg.RunEntries }

// newGlobalLocked replaces the partition's filter with an empty one sized
// for capacity ids (before headroom).
func (d *Index) newGlobalLocked(ids int) {
	capacity := max(d.globalMin(), int(globalHeadroom*float64(ids)))
	d.global = index.NewKFilter(capacity, globalBitsPerKey, globalK, 0)
	d.globalCap, d.globalAdded = capacity, 0
}

// globalAddLocked adds a run's entries to the partition's filter (creating
// it for the first run) and, while a rebuild runs, to what the rebuilt one
// must be given too.
func (d *Index) globalAddLocked(entries []index.RunEntry) {
	if d.global == nil {
		d.newGlobalLocked(len(entries))
	}
	for _, e := range entries {
		d.global.Add(e.Hash)
	}
	d.globalAdded += len(entries)
	if d.rebuilding {
		for _, e := range entries {
			d.rebuildPending = append(d.rebuildPending, e.Hash)
		}
	}
}

// globalDueLocked reports whether the partition's filter holds more ids than
// it was sized for (its false positives climb past ~6 %).
func (d *Index) globalDueLocked() bool {
	return d.global != nil && !d.rebuilding && d.globalAdded > d.globalCap
}

// rebuildGlobal builds the partition's filter again from the run files of
// runs (a snapshot taken under the lock, with d.rebuilding set), sized for
// the entries they hold. It needs no lock: run files never change once
// written. A run whose file fails to read or verify is read from the
// segments instead, as rewriteRun does: they are the truth, and a damaged run
// file must not fail every rebuild (the job loop stops at a failed job, so
// one would also stop every merge while the filter overfills). Only a failed
// segment read fails the rebuild (the old filter stays: complete, only fuller).
func (d *Index) rebuildGlobal(runs []*dedupRun) (*index.KFilter, int, int, error) {
	ids := 0
	for _, r := range runs {
		ids += r.hdr.Count
	}
	capacity := max(d.globalMin(), int(globalHeadroom*float64(ids)))
	f := index.NewKFilter(capacity, globalBitsPerKey, globalK, 0)
	for _, r := range runs {
		if _, err := d.readRunEach(r.hdr.First, r.hdr.Last, func(e index.RunEntry) { f.Add(e.Hash) }); err == nil {
			continue
		}
		entries, err := d.indexSegments(r.hdr.First, r.hdr.Last)
		if err != nil {
			return nil, 0, 0, err
		}
		for _, e := range entries {
			f.Add(e.Hash)
		}
	}
	return f, capacity, ids, nil
}

// swapGlobalLocked puts a rebuilt filter in place, with the ids sealed
// while it was built.
func (d *Index) swapGlobalLocked(f *index.KFilter, capacity, ids int) {
	for _, h := range d.rebuildPending {
		f.Add(h)
	}
	d.global, d.globalCap, d.globalAdded = f, capacity, ids+len(d.rebuildPending)
	d.rebuilding, d.rebuildPending = false, nil
}

// dropGlobalLocked forgets the partition's filter (the index leaves memory,
// or its runs were all deleted).
func (d *Index) dropGlobalLocked() {
	d.global, d.globalCap, d.globalAdded = nil, 0, 0
	d.rebuilding, d.rebuildPending = false, nil
}
