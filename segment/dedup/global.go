package dedup

import (
	"encoding/binary"

	"github.com/combmq/comb/index"
)

// The partition's filter (issue 23: dedup at one probe per id). Every id of
// every sealed run is also in one filter of the whole partition, so a
// lookup of an id the partition never held (the common case: a push of new
// messages) costs one probe of one cache line, however many runs there are.
// Only the few ids it answers "maybe" for (true duplicates and ~5 % false
// positives) go on to the runs. Per-run filters alone cost a probe (a cache
// miss in a filter larger than the caches) per run per id: 700 probes for a
// push of 100 into a partition of 10 M ids in 7 runs, against ~120 here.
//
// Where the bits go (the budget: ≤ 1 B of memory a retained id). For an id
// the partition's filter lets through, each run it asks costs a page touch
// unless the run's own filter says no; two filters' false positives
// multiply, so page touches a batch ≈ 100 × Σ over runs of
// 0.62^(partition bits + run bits). A run's filter costs its bits times its
// ids, so bits are cheap on the small runs and dear on the large: a
// partition of 10 M ids holds ~94 % of them in its three largest runs.
// Small runs (tiers 0-2, ≤ ~150,000 ids each) get 8 bits an id, the next
// tier 4, and the largest none: a touch of one of those is a read of a
// cache line or two of its mapped, once-verified page (runmap.go), so ~15
// touches a batch cost less than the 3-4 B an id that filters making them
// rare would. That is 5.75 to 6.9 bits an id in the partition's filter and
// ~0.5 in the runs' at 10 M ids: 0.9-1 B an id with the page indexes
// (BenchmarkFind100: 0.99 B an id, docs/benchmarks.md).
//
// The filter only grows: merges and retention keep its ids or drop some
// (a dropped id costs a false positive at most, never a wrong answer). It
// is sized for globalHeadroom times the ids of the runs when built (and
// at least globalHeadroomRuns runs' worth more); once
// more ids than that were added, a background job (merge.go) builds it
// again from the run files, sized for the ids they hold then, while
// lookups use the old one; ids sealed meanwhile are added to both.
//
// Invariant (never a missed duplicate): every entry of every run in memory
// is in d.global. Seals, the load and a run rebuilt from the segments add
// their entries; merges and rewrites write only entries of runs already in it.

const (
	// globalBitsPerKey and globalK size the partition's filter: ~6.3 %
	// false positives when full, ~3.8 % just built (headroom).
	globalBitsPerKey = 5.75
	globalK          = 4
	// globalHeadroom is the ids a (re)built filter has room for, over
	// those it is built with: each rebuild reads every run file once, so
	// a partition at a steady size reads each id 1/(headroom-1) = 5 times
	// over its life (a sequential read of 16 bytes, against ~4.4 rewrites
	// by the merges), and the filter holds 5.75 to 6.9 bits a retained id.
	globalHeadroom = 1.2
	// globalHeadroomRuns is the fewest runs' worth of ids (RunEntries
	// each) a (re)built filter has room for over those it is built with.
	// 1.2 times alone left a partition of up to ~30,000 ids (5 runs) less
	// room than one seal adds, so every seal there rebuilt the filter from
	// every run file (3.4 % of a sustained push's server CPU, issue 23);
	// four runs' worth cost ~18 KB a partition at most.
	globalHeadroomRuns = 4
	// runFilterSeed rotates the keys of a run's filter away from the
	// partition's, so their false positives are independent.
	runFilterSeed = 32
)

// runFilterFor returns the bits an id and bits set a key (k) of the filter
// of a run of count ids: 0 bits for a large run, which has none (see above).
func (d *Index) runFilterFor(count int) (bitsPerKey float64, k int) {
	switch t := d.tier(count); {
	case t <= 2:
		return 8, 5 // ~2.5 % false positives
	case t == 3:
		return 4, 3 // ~15 %
	}
	return 0, 0
}

// globalMin is the fewest ids a partition's filter is sized for.
func (d *Index) globalMin() int { return 2 * d.cfg.RunEntries }

// newGlobalLocked replaces the partition's filter with an empty one sized
// for ids ids (and headroom).
func (d *Index) newGlobalLocked(ids int) {
	d.global, d.globalCap = d.newGlobal(ids)
	d.globalAdded = 0
}

// newGlobal returns an empty partition filter sized for ids (with headroom)
// and the ids it has room for.
func (d *Index) newGlobal(ids int) (*index.KFilter, int) {
	capacity := max(d.globalMin(), int(globalHeadroom*float64(ids)), ids+globalHeadroomRuns*d.cfg.RunEntries)
	return index.NewKFilter(capacity, globalBitsPerKey, globalK, 0), capacity
}

// globalAddLocked adds a run's entries to the partition's filter (creating
// it for the first run) and, while a rebuild runs, to what the rebuilt one
// must be given too.
func (d *Index) globalAddLocked(entries []index.RunEntry) {
	if d.global == nil {
		d.newGlobalLocked(len(entries))
	}
	a := filterAdder{f: d.global}
	for _, e := range entries {
		a.add(e.Hash)
	}
	a.flush()
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
	f, capacity := d.newGlobal(ids)
	a := &filterAdder{f: f}
	var buf []byte
	for _, r := range runs {
		// Streamed (runstream.go): an entry of a page that fails after it
		// was added costs a bit set, never a missed id, and the segments
		// then give the run's ids.
		x, err := d.openRunReader(r.hdr.First, r.hdr.Last, buf)
		if err == nil {
			for ents, ok := x.NextPage(); ok; ents, ok = x.NextPage() {
				for j := 0; j+index.RunEntrySize <= len(ents); j += index.RunEntrySize {
					a.add(binary.LittleEndian.Uint64(ents[j:]))
				}
			}
			err = x.err()
			buf = x.Buf()
			x.close()
		}
		a.flush()
		if err == nil {
			continue
		}
		entries, err := d.indexSegments(r.hdr.First, r.hdr.Last)
		if err != nil {
			return nil, 0, 0, err
		}
		for _, e := range entries {
			a.add(e.Hash)
		}
		a.flush()
	}
	return f, capacity, ids, nil
}

// filterAdder adds hashes to a filter a batch at a time, touching the
// batch's blocks first (KFilter.Prefetch) so that their cache misses
// overlap: an add into a filter larger than the caches is one miss, and
// the rebuilds and seals add every id of the partition.
type filterAdder struct {
	f   *index.KFilter
	buf [64]uint64
	n   int
}

func (a *filterAdder) add(h uint64) {
	a.buf[a.n] = h
	if a.n++; a.n == len(a.buf) {
		a.flush()
	}
}

// flush adds the hashes buffered.
func (a *filterAdder) flush() {
	hs := a.buf[:a.n]
	a.f.Prefetch(hs)
	for _, h := range hs {
		a.f.Add(h)
	}
	a.n = 0
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

// dropGlobalLocked forgets the partition's filter: the index leaves memory,
// a load starts (or fails, or finds no run to keep), or its runs are found
// to be another log's. A rebuild under way then swaps nothing (runGlobalJob
// sees rebuilding cleared).
func (d *Index) dropGlobalLocked() {
	d.global, d.globalCap, d.globalAdded = nil, 0, 0
	d.rebuilding, d.rebuildPending = false, nil
}
