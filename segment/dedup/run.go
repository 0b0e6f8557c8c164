package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// Sealed dedup runs (issue 14: dedup memory that does not grow with stored
// messages). The newest Config.RunEntries transaction ids of a loaded log sit
// in the active table (and dedup.idx); when it fills they are sealed into a
// run file, sorted by hash (index.EncodeRun), and memory keeps only the
// first hash of each of the run's pages (8 bytes a 256 ids) and, for a small
// run, its Bloom filter (global.go: runFilterFor). The partition's filter
// answers first; an id it may hold has the one page of each run that may
// hold it searched (of a run whose filter says "maybe", or that has none),
// through the file's mapping (runmap.go) or a pread, the page checked before
// any entry of it is read, and every hash match is still verified against
// the record (Find), so a false positive costs a page touch, never a wrong
// answer.
//
// Runs are merged size-tiered, four neighbours of one tier at a time
// (Config.MergeFanout; 2 is the binary counter), in the background
// (merge.go), so a log holds up to 3 runs a tier of log4(ids/RunEntries);
// a lookup probes the partition's filter once an id and the runs' filters
// only for the ids it may hold. Retention drops runs wholly below the first
// offset and rewrites one that is half expired, so memory follows the
// retained messages.
//
// Run files are caches like dedup.idx: written once under their own name
// (createRunFile), never synced. A run that is missing, damaged, torn by a
// crash or past the offsets a crash kept is deleted by the load, which
// takes the runs it replaced if they are there and re-indexes a gap from
// the segments.

// DefaultRunEntries is how many ids the active table holds before they are
// sealed into a run (Config.RunEntries): 6,144 entries fill its 8,192 slots (128 KiB) to the
// 3/4 load it allows, so the table never grows past them. That is 0.26
// bytes a message of issue 14's shape (100 partitions, 500,000 messages
// each); twice the entries would halve the seals but double that.
const DefaultRunEntries = 6144

// dedupTableMaxBytes is the active table's size after a seal: a table grown
// past it (one push larger than a run) is dropped rather than kept.
const dedupTableMaxBytes = 16 * 8192

// dedupRun is a sealed run in memory.
//
// m is the run's file mapped read-only by the first lookup that touches a
// page of it (runmap.go), kept until the run leaves memory
// (closeRunsLocked). Where files cannot be mapped, f is the file opened by
// the first lookup that reads a page and kept open (one handle, counted
// through Config.Handles) until the run leaves memory or the handle cache
// releases it (closeRunHandlesLocked): a page read then costs one pread
// instead of an open, a pread and a close (issue 14: 7.6 % of a push's CPU
// went to those). Only lookups use them, under the dedup lock; merges read
// whole files by name.
type dedupRun struct {
	hdr       index.RunHeader // First..Last, Count, Check
	pageFirst []uint64        // the first hash of each page
	filter    *index.KFilter  // narrows the partition filter's "maybe" down; nil for a large run (global.go)
	f         vfs.File        // the pread path's file (runmap.go): nil until a page is read

	// The mapped path (runmap.go): the file mapped read-only on the first
	// touch, and a bit a page once that page verified in this mapping.
	m        []byte
	verified []uint64
	noMap    bool // the file cannot be mapped here: the pread path reads it
}

// closeRunsLocked closes the files and mappings of runs leaving memory
// (dropped, replaced, rebuilt) and takes their handles off the cache.
func (d *Index) closeRunsLocked(runs ...*dedupRun) {
	d.closeRunHandlesLocked(runs...)
	for _, r := range runs {
		if r != nil && r.m != nil {
			r.unmap()
			mappedRuns.Add(-1)
		}
	}
}

// closeRunHandlesLocked closes the files of runs (a release by the handle
// cache, Park) and takes their handles off the cache. Mappings stay: they
// hold no file handle.
func (d *Index) closeRunHandlesLocked(runs ...*dedupRun) {
	for _, r := range runs {
		if r != nil && r.f != nil {
			_ = r.f.Close()
			r.f = nil
			d.handles(-1)
		}
	}
}

func (r *dedupRun) name() string { return runName(r.hdr.First, r.hdr.Last) }

// runName is a run file's name: its first and last offsets (index.RunFileName).
func runName(first, last uint64) string { return index.RunFileName(first, last) }

// listRuns returns the run files in dir as (first, last), sorted by first
// ascending and, for equal firsts, last descending (a merged run before the
// runs it replaced).
func listRuns(fsys vfs.FS, dir string) ([][2]uint64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, err
	}
	var runs [][2]uint64
	for _, n := range names {
		if a, b, ok := ParseRunName(n); ok {
			runs = append(runs, [2]uint64{a, b})
		} else if a, b, ok := ParseRunName(strings.TrimSuffix(n, ".tmp")); ok && strings.HasSuffix(n, ".tmp") {
			_ = fsys.Remove(filepath.Join(dir, runName(a, b)+".tmp")) // a write a crash interrupted
		}
	}
	sort.Slice(runs, func(i, j int) bool {
		return runs[i][0] < runs[j][0] || (runs[i][0] == runs[j][0] && runs[i][1] > runs[j][1])
	})
	return runs, nil
}

// newDedupRun builds the in-memory part of a run from its verified entries:
// its page index and, unless it is large (runFilterFor), its filter.
func (d *Index) newDedupRun(hdr index.RunHeader, entries []index.RunEntry) *dedupRun {
	r := &dedupRun{hdr: hdr, pageFirst: make([]uint64, hdr.Pages())}
	if bits, k := d.runFilterFor(len(entries)); bits > 0 {
		r.filter = index.NewKFilter(len(entries), bits, k, runFilterSeed)
		for _, e := range entries {
			r.filter.Add(e.Hash)
		}
	}
	for k := range r.pageFirst {
		r.pageFirst[k] = entries[k*index.RunPageEntries].Hash
	}
	return r
}

// mayContain reports whether r may hold hash h (its filter's answer; a run
// without one may hold any).
func (r *dedupRun) mayContain(h uint64) bool { return r.filter == nil || r.filter.MayContain(h) }

// readRun reads and verifies a whole run file, returning its entries.
func (d *Index) readRun(first, last uint64) (index.RunHeader, []index.RunEntry, error) {
	b, err := d.cfg.FS.ReadFile(d.path(runName(first, last)))
	if err != nil {
		return index.RunHeader{}, nil, err
	}
	var entries []index.RunEntry
	if h, err := index.ParseRunHeader(b); err == nil && int64(len(b)) == h.Size() {
		entries = make([]index.RunEntry, 0, h.Count) // sized by a header the scan checks again
	}
	hdr, err := CheckRun(b, first, last, func(e index.RunEntry) { entries = append(entries, e) })
	if err != nil {
		return hdr, nil, fmt.Errorf("%s: %w", runName(first, last), err)
	}
	return hdr, entries, nil
}

// writeRun writes a run file (createRunFile: a crash may leave it torn, and
// unsynced bytes may be lost with it; the load checks every byte) and
// returns its in-memory part.
func (d *Index) writeRun(first, last uint64, entries []index.RunEntry) (*dedupRun, error) {
	return d.writeEncodedRun(index.EncodeRun(first, last, entries), entries)
}

// writeEncodedRun is writeRun of b, entries encoded (index.EncodeRun).
func (d *Index) writeEncodedRun(b []byte, entries []index.RunEntry) (*dedupRun, error) {
	hdr, _ := index.ParseRunHeader(b)
	// Unsynced: a run is a cache the load verifies whole.
	if err := d.writeRunFile(d.path(runName(hdr.First, hdr.Last)), b); err != nil {
		return nil, err
	}
	return d.newDedupRun(hdr, entries), nil
}

// sealScratch is a seal's memory (the table's entries, the sort's scratch,
// the encoded file), reused across seals of every log: none of it is kept
// by the run (newDedupRun copies what it needs).
type sealScratch struct {
	entries, tmp []index.RunEntry
	file         []byte
}

var sealScratchPool = sync.Pool{New: func() any { return new(sealScratch) }}

// indexSegments returns the run entries of the records first..last, read
// from the segments (what a run is rebuilt from).
func (d *Index) indexSegments(first, last uint64) ([]index.RunEntry, error) {
	var entries []index.RunEntry
	for from := first; from <= last; {
		var end uint64
		n, err := d.cfg.Source.Read(from, 4096, 0, func(off uint64, txid string, _ [16]byte) {
			if off <= last && txid != "" {
				entries = append(entries, index.RunEntry{Hash: index.HashTxn(txid), Offset: off})
			}
			end = off
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		from = end + 1
	}
	index.SortRunEntries(entries)
	return entries, nil
}

// sealLocked writes the active table as the run covering runsEnd+1 ..
// covered, empties the table and restarts dedup.idx after it, then starts
// merging runs in the background (merge.go). A failed write keeps the table (complete, only larger) and is
// retried after another run's worth of ids.
func (d *Index) sealLocked() error {
	if d.covered <= d.runsEnd {
		return nil
	}
	sc := sealScratchPool.Get().(*sealScratch)
	defer sealScratchPool.Put(sc)
	entries := sc.entries[:0]
	d.table.Each(func(h, off uint64) { entries = append(entries, index.RunEntry{Hash: h, Offset: off}) })
	sc.entries = entries
	sc.tmp = index.SortRunEntriesWith(entries, sc.tmp)
	b := index.AppendRun(sc.file, d.runsEnd+1, d.covered, entries)
	sc.file = b
	r, err := d.writeEncodedRun(b, entries)
	if err != nil {
		d.sealRetryAt = d.table.Len() + d.cfg.RunEntries
		return err
	}
	d.runs = append(d.runs, r)
	d.globalAddLocked(entries)
	d.runsEnd, d.sealRetryAt = d.covered, 0
	if d.table.Bytes() > dedupTableMaxBytes {
		d.table = index.Table{}
	} else {
		d.table.Reset()
	}
	d.restartFileLocked()
	d.startMergeLocked()
	return nil
}

// trimLocked follows retention: runs wholly below first go, and the oldest
// run is rewritten without its expired ids once they are half of it, in the
// background like a merge (merge.go). A failed rewrite keeps the run
// (correct, only larger).
func (d *Index) trimLocked(first uint64) {
	d.trimmedAt = first
	drop := 0
	for drop < len(d.runs) && d.runs[drop].hdr.Last < first {
		d.closeRunsLocked(d.runs[drop])
		_ = d.cfg.FS.Remove(d.path(d.runs[drop].name()))
		drop++
	}
	if drop > 0 {
		d.runs = append([]*dedupRun(nil), d.runs[drop:]...)
	}
	d.startMergeLocked()
}

// rewriteDueLocked reports whether the oldest run has at least half of its
// offsets below the first offset retention left.
func (d *Index) rewriteDueLocked() bool {
	if len(d.runs) == 0 {
		return false
	}
	r, first := d.runs[0].hdr, d.trimmedAt
	return first > r.First && first <= r.Last && first-r.First >= (r.Last-r.First+1)/2
}

// rewriteRun writes run r again covering from..r.Last with only the entries
// at or after from: from its file, or from the segments when the file does
// not verify. The caller removes r's file once the new run replaced it.
func (d *Index) rewriteRun(r *dedupRun, from uint64) (*dedupRun, error) {
	from = max(from, r.hdr.First)
	_, entries, err := d.readRun(r.hdr.First, r.hdr.Last)
	if err == nil {
		kept := entries[:0]
		for _, e := range entries {
			if e.Offset >= from {
				kept = append(kept, e)
			}
		}
		entries = kept
	} else if entries, err = d.indexSegments(from, r.hdr.Last); err != nil {
		return nil, err
	}
	return d.writeRun(from, r.hdr.Last, entries)
}

// loadRunsLocked reads the run files that chain from the log's first offset
// (each starting at or before the offset after the one before it, ending
// below openNext) into memory and deletes the rest: runs retention left
// behind, runs a merge or rewrite replaced, runs past what a crash kept, and
// every run after a gap (a run lost or damaged), whose offsets the caller
// re-indexes from the segments. It returns what was rebuilt and why ("" when
// nothing was lost). Only a failed listing or segment read is an error.
func (d *Index) loadRunsLocked(first uint64) (why string, err error) {
	names, err := listRuns(d.cfg.FS, d.cfg.Dir)
	if err != nil {
		return "", err
	}
	d.runs, d.runsEnd = nil, 0
	d.dropGlobalLocked()
	covered := first - 1
	if first == 0 {
		covered = 0
	}
	// The partition's filter is sized for the offsets the runs may cover
	// (at least the ids they hold), so no rebuild follows the load at once.
	est := 0
	for _, fl := range names {
		if fl[1] >= first && fl[1] < d.openNext {
			est += int(fl[1] - max(fl[0], first) + 1)
		}
	}
	if est > 0 {
		d.newGlobalLocked(est)
	}
	gap := false
	var top index.RunEntry // the newest kept run's entry with the highest offset
	for _, fl := range names {
		a, b := fl[0], fl[1]
		switch {
		case gap, b < first, b >= d.openNext, b <= covered:
		case a > covered+1:
			gap = true
			why = fmt.Sprintf("dedup run %s starts after offset %d, where the runs before it end: a run is missing; re-indexed from the segments", runName(a, b), covered)
		default:
			hdr, entries, rerr := d.readRun(a, b)
			if rerr != nil {
				// Deleted; the runs it replaced, if a crash left them
				// (a merge removes them once its file is whole), come
				// next in the listing, and a gap they leave is found
				// like any other.
				why = fmt.Sprintf("dedup run unusable (%v): re-indexed from the runs it replaced or the segments", rerr)
				break
			}
			d.runs = append(d.runs, d.newDedupRun(hdr, entries))
			d.globalAddLocked(entries)
			d.runsEnd, covered = b, b
			top = index.RunEntry{}
			for _, e := range entries {
				if e.Offset > top.Offset {
					top = e
				}
			}
			continue
		}
		_ = d.cfg.FS.Remove(d.path(runName(a, b)))
	}
	if len(d.runs) == 0 {
		d.dropGlobalLocked()
		return why, nil
	}
	// Verified runs can still describe another log (files copied or restored
	// from elsewhere): the newest run's newest entry must name the record
	// at its offset, as for dedup.idx.
	if top.Offset == 0 {
		return why, nil // the newest run holds no id
	}
	match, err := d.entryMatches(top.Hash, top.Offset)
	if err != nil || match {
		return why, err
	}
	for _, r := range d.runs {
		_ = d.cfg.FS.Remove(d.path(r.name()))
	}
	d.runs, d.runsEnd = nil, 0
	d.dropGlobalLocked()
	return "dedup runs rebuilt from the segments: the newest names another transaction id than the record at its offset, so they do not describe this log", nil
}

// runCandidates returns the offsets run i holds for hash h, reading the
// pages that may hold it (one, unless equal hashes cross a page boundary).
// A page that cannot be read or fails its check makes the run be rebuilt
// from the segments and read again; only a failure of that is an error.
func (d *Index) runCandidates(i int, h uint64, out []uint64) ([]uint64, error) {
	out, err := d.runs[i].candidates(d, h, out)
	if err == nil {
		return out, nil
	}
	r := d.runs[i]
	d.closeRunsLocked(r)
	entries, serr := d.indexSegments(r.hdr.First, r.hdr.Last)
	if serr != nil {
		return out, errors.Join(err, serr)
	}
	nr, werr := d.writeRun(r.hdr.First, r.hdr.Last, entries)
	if werr != nil {
		return out, errors.Join(err, werr)
	}
	d.runs[i] = nr
	d.globalAddLocked(entries) // the segments' ids for those offsets: keep the invariant whatever the file held
	d.rebuilt(fmt.Sprintf("%v: rebuilt from the segments", err))
	return nr.candidates(d, h, out)
}

// runPages recycles the page buffers of the pread path (a page on the
// stack escapes through ReadAt: one 4 KiB allocation a filter hit).
var runPages = sync.Pool{New: func() any { return new([index.RunPageSize]byte) }}

// maxMappedRuns bounds the run files mapped at once across all logs: each
// mapping is a VMA of the process, whose count the kernel bounds
// (vm.max_map_count, 65,530 by default) and the segment indexes need too.
// Past it a run is read through the pread path.
const maxMappedRuns = 16384

var mappedRuns atomic.Int64

// candidates appends to out the offsets of r's entries with hash h: from
// its mapping (mapped on first use, runmap.go) or, where files cannot be
// mapped, by reading its pages (the file opened on first use stays open:
// see dedupRun).
func (r *dedupRun) candidates(d *Index, h uint64, out []uint64) ([]uint64, error) {
	pages := len(r.pageFirst)
	if pages == 0 || h < r.pageFirst[0] {
		return out, nil // below the run's smallest hash: a filter false positive
	}
	k := r.startPage(h)
	d.touching = r // a memory fault from here on is r's (lookup.go)
	if r.m == nil && !r.noMap {
		if mappedRuns.Add(1) > maxMappedRuns {
			mappedRuns.Add(-1)
		} else if err := r.mapLocked(d); err != nil {
			mappedRuns.Add(-1)
			if !errors.Is(err, errNoMap) {
				return out, err
			}
		}
	}
	if r.m != nil {
		return r.mappedCandidates(k, h, out)
	}
	if r.f == nil {
		f, err := d.cfg.FS.OpenFile(d.path(r.name()), os.O_RDONLY)
		if err != nil {
			return out, fmt.Errorf("%s: %w", r.name(), err)
		}
		r.f = f
		d.handles(1)
	}
	bp := runPages.Get().(*[index.RunPageSize]byte)
	defer runPages.Put(bp)
	buf := bp[:]
	for start := k; k < pages && (k == start || r.pageFirst[k] <= h); k++ {
		at, n := r.hdr.Page(k)
		page := buf[:n*index.RunEntrySize+4]
		if m, err := r.f.ReadAt(page, at); m < len(page) {
			if err == nil || errors.Is(err, fs.ErrClosed) {
				err = fmt.Errorf("%w: short page", index.ErrRun)
			}
			return out, fmt.Errorf("%s: page %d: %w", r.name(), k, err)
		}
		ents, err := index.CheckRunPage(r.hdr, k, page)
		if err != nil {
			return out, fmt.Errorf("%s: %w", r.name(), err)
		}
		var done bool
		if out, done = collect(ents, 0, h, out); done {
			return out, nil
		}
	}
	return out, nil
}

// mappedCandidates is candidates from r's mapping, from page k on.
func (r *dedupRun) mappedCandidates(k int, h uint64, out []uint64) ([]uint64, error) {
	pages := len(r.pageFirst)
	for start := k; k < pages && (k == start || r.pageFirst[k] <= h); k++ {
		ents, err := r.mappedPage(k)
		if err != nil {
			return out, err
		}
		j := 0
		if k == start {
			j = r.lowerBound(ents, k, h)
		}
		var done bool
		if out, done = collect(ents, j, h, out); done {
			return out, nil
		}
	}
	return out, nil
}

// collect appends the offsets of the entries with hash h from entry j of
// ents (a verified page's entries) on; done is set once an entry past h
// shows the run holds no more.
func collect(ents []byte, j int, h uint64, out []uint64) (_ []uint64, done bool) {
	for n := len(ents) / index.RunEntrySize; j < n; j++ {
		if e := index.RunEntryAt(ents, j); e.Hash == h {
			out = append(out, e.Offset)
		} else if e.Hash > h {
			return out, true
		}
	}
	return out, false
}

// interpolationSteps bounds the walk from an interpolated guess (hashes are
// uniform, so the guess is a few places off); ids crafted to skew the hashes
// only make the search binary.
const interpolationSteps = 8

// startPage returns the page from which entries with hash h (≥ the run's
// first) may start: the one before the first page whose first hash is ≥ h,
// since equal hashes may end the page before it.
func (r *dedupRun) startPage(h uint64) int {
	pf := r.pageFirst
	n := len(pf)
	g, _ := bits.Mul64(h, uint64(n)) // where h falls among n uniform hashes
	k := int(g)
	steps := 0
	if pf[k] >= h {
		for k > 0 && pf[k-1] >= h && steps < interpolationSteps {
			k, steps = k-1, steps+1
		}
	} else {
		for k < n && pf[k] < h && steps < interpolationSteps {
			k, steps = k+1, steps+1
		}
	}
	if steps == interpolationSteps {
		k = sort.Search(n, func(k int) bool { return pf[k] >= h })
	}
	if k > 0 {
		k-- // entries with hash h may end the page before the first that starts at h
	}
	return k
}

// guess returns where among the n entries of page k an entry with hash h
// would be if the page's hashes were spread evenly between its first hash
// and the next page's (they are uniform: the guess is a few entries off).
func (r *dedupRun) guess(k, n int, h uint64) int {
	lo, hi := r.pageFirst[k], ^uint64(0)
	if k+1 < len(r.pageFirst) {
		hi = r.pageFirst[k+1]
	}
	if h <= lo || hi <= lo {
		return 0
	}
	return min(int(float64(h-lo)/float64(hi-lo)*float64(n)), n-1)
}

// lowerBound returns the first entry of page k's verified entries ents whose
// hash is ≥ h, guessed from where h falls between the page's first hash and
// the next page's.
func (r *dedupRun) lowerBound(ents []byte, k int, h uint64) int {
	n := len(ents) / index.RunEntrySize
	hashAt := func(j int) uint64 { return binary.LittleEndian.Uint64(ents[j*index.RunEntrySize:]) }
	j := r.guess(k, n, h)
	steps := 0
	if hashAt(j) >= h {
		for j > 0 && hashAt(j-1) >= h && steps < 4*interpolationSteps {
			j, steps = j-1, steps+1
		}
	} else {
		for j < n && hashAt(j) < h && steps < 4*interpolationSteps {
			j, steps = j+1, steps+1
		}
	}
	if steps == 4*interpolationSteps {
		j = sort.Search(n, func(j int) bool { return hashAt(j) >= h })
	}
	return j
}
