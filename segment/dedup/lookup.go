package dedup

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/combmq/comb/index"
)

// verifyReadMsgs and verifyReadBytes bound one read made to verify dedup candidates: enough for
// a whole segment of a typical push, so a retried request of 100 items decodes its segment
// once, not 100 times.
const (
	verifyReadMsgs  = 1024
	verifyReadBytes = 4 << 20
)

// Find calls found(i, offset, id) once for each txids[i] that a retained
// record carries, with the newest such record's offset and message id, all
// under one lock of the index. hashes[i] is index.HashTxn(txids[i]) (0 for
// an empty id), or nil to compute them. Empty ids are skipped. The first
// call loads the index (runs, file, and a read of the segments they do not
// cover). The active table is searched first; ids it does not answer are
// looked up in the sealed runs whose filter may hold them (run.go). Hash
// matches are verified by reading the records (so a collision or a filter
// false positive never yields a wrong answer); candidates are visited in
// offset order and each read decodes a run of segments once for all of
// them. Safe concurrently with Append.
//
// Errors: Config.Closed's; a failed load or run rebuild, wrapped with the
// directory; a failed record read.
func (d *Index) Find(txids []string, hashes []uint64, found func(i int, offset uint64, id [16]byte)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Closed != nil {
		if err := d.cfg.Closed(); err != nil {
			return err
		}
	}
	if !d.loaded {
		if err := d.loadLocked(); err != nil {
			return fmt.Errorf("segment log %s: dedup index: %w", d.cfg.Dir, err)
		}
	}
	d.touch()
	defer d.accountLocked() // a load, a trim or a rebuilt run changed what memory holds
	if first := d.cfg.Source.FirstOffset(); first != d.trimmedAt {
		d.trimLocked(first)
	}
	if hashes == nil {
		var hashBuf [128]uint64
		hashes = hashBuf[:0]
		for _, tx := range txids {
			var h uint64
			if tx != "" {
				h = index.HashTxn(tx)
			}
			hashes = append(hashes, h)
		}
	}
	// What each id found: scratch of the index, kept under its lock (on the
	// stack it would escape through the Source's read callback).
	if cap(d.best) < len(txids) {
		d.best = make([]hit, len(txids))
	}
	best := d.best[:len(txids)]
	clear(best)
	// The table holds the newest ids: one found there is answered, and only
	// the others are looked up in the runs (all older).
	var cands []candidate
	if d.table.Len() > 0 {
		d.table.Prefetch(hashes)
		for i, h := range hashes {
			if txids[i] == "" {
				continue
			}
			d.table.Lookup(h, func(off uint64) bool {
				cands = append(cands, candidate{off, i})
				return true
			})
		}
	}
	if err := d.verifyCandidates(txids, cands, best); err != nil {
		return err
	}
	if len(d.runs) > 0 {
		// One probe of the partition's filter per id (global.go): only the
		// ids it may hold are asked of the runs.
		var maybeBuf [128]int
		maybe := maybeBuf[:0]
		if d.global != nil {
			d.global.Prefetch(hashes)
		}
		for i, h := range hashes {
			if !best[i].ok && txids[i] != "" && (d.global == nil || d.global.MayContain(h)) {
				maybe = append(maybe, i)
			}
		}
		if d.finds++; d.finds%reverifyEvery == 0 {
			d.forgetVerifiedLocked()
		}
		var err error
		if cands, err = d.findRunsLocked(hashes, maybe, cands[:0]); err != nil {
			return fmt.Errorf("segment log %s: dedup index: %w", d.cfg.Dir, err)
		}
		if err := d.verifyCandidates(txids, cands, best); err != nil {
			return err
		}
	}
	for i := range best {
		if best[i].ok {
			found(i, best[i].offset, best[i].id)
		}
	}
	return nil
}

// reverifyEvery is how many lookups of an index may trust a mapped page that
// verified once: then every run's verified bitmap is cleared, so a page
// changed behind its mapping since (runmap.go) is found by the next touch
// within that many lookups, at the cost of one CRC-32C a page touched again.
const reverifyEvery = 1 << 20

// forgetVerifiedLocked clears every mapped run's verified bitmap.
func (d *Index) forgetVerifiedLocked() {
	for _, r := range d.runs {
		clear(r.verified)
	}
}

// findRunsLocked appends to cands the offsets the runs hold for the hashes
// of the ids in maybe, newest run first. A mapped run file cut short under
// the mapping (a memory fault: runmap.go) is read through the pread path
// from then on, which finds it damaged and rebuilds it from the segments;
// the lookup then starts again.
func (d *Index) findRunsLocked(hashes []uint64, maybe []int, cands []candidate) ([]candidate, error) {
	if len(maybe) == 0 {
		return cands, nil
	}
	for range len(d.runs) + 1 {
		out, err := d.tryFindRunsLocked(hashes, maybe, cands)
		var fe *faultError
		if !errors.As(err, &fe) {
			return out, err
		}
		d.closeRunsLocked(fe.run)
		fe.run.noMap = true
	}
	return cands, fmt.Errorf("%w: memory faults on every try", index.ErrRun)
}

func (d *Index) tryFindRunsLocked(hashes []uint64, maybe []int, cands []candidate) (_ []candidate, err error) {
	d.touching = nil
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if !isFault(p, d.touching) {
				panic(p)
			}
			err = &faultError{run: d.touching, p: p}
		}
	}()
	// The runs each id is asked of (their filters may hold it, or they have
	// none), newest run first; then a touch of each mapped page's guessed
	// entry, so the cache misses of the whole batch overlap (as the filters'
	// Prefetch) before the pages are checked and searched one by one.
	probes := d.probes[:0]
	for ri := len(d.runs) - 1; ri >= 0; ri-- {
		for _, i := range maybe {
			if d.runs[ri].mayContain(hashes[i]) {
				probes = append(probes, probe{int32(ri), int32(i)})
			}
		}
	}
	d.probes = probes
	var sink uint64
	for _, p := range probes {
		if r := d.runs[p.ri]; r.m != nil {
			d.touching = r
			sink ^= r.touch(hashes[p.i])
		}
	}
	touchSink.Store(sink)
	var offs []uint64
	for _, p := range probes {
		if offs, err = d.runCandidates(int(p.ri), hashes[p.i], offs[:0]); err != nil {
			return cands, err
		}
		for _, off := range offs {
			cands = append(cands, candidate{off, int(p.i)})
		}
	}
	return cands, nil
}

// probe is a run (d.runs[ri]) a lookup asks for the id txids[i].
type probe struct{ ri, i int32 }

var touchSink atomic.Uint64

// verifier is verifyCandidates' state across the records one read returns.
type verifier struct {
	txids []string
	cands []candidate // sorted by offset
	best  []hit
	k     int    // the first candidate not before the record seen last
	last  uint64 // the offset of the record seen last
}

// record matches the record at off against the candidates at off.
func (v *verifier) record(off uint64, txid string, id [16]byte) {
	v.last = off
	for v.k < len(v.cands) && v.cands[v.k].off < off {
		v.k++
	}
	for ; v.k < len(v.cands) && v.cands[v.k].off == off; v.k++ {
		if i := v.cands[v.k].i; txid == v.txids[i] {
			v.best[i] = hit{off, id, true} // candidates ascend: the last match is the newest
		}
	}
}

// candidate is an offset the dedup index holds for txids[i]'s hash.
type candidate struct {
	off uint64
	i   int
}

// hit is the record found for an id (ok: one was).
type hit struct {
	offset uint64
	id     [16]byte
	ok     bool
}

// verifyCandidates reads the records at the candidates' offsets and records
// in best[i], for each txids[i] a record really carries, the newest such
// record. Candidates are visited in offset order and each read decodes a run
// of segments once for all the candidates it reaches.
func (d *Index) verifyCandidates(txids []string, cands []candidate, best []hit) error {
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	// The read's callback is one method value of the index, made once and
	// reused under its lock: a closure over this call's variables would cost
	// three allocations a read (the closure and the two it moves to the heap).
	v := &d.ver
	if d.verFn == nil {
		d.verFn = v.record
	}
	v.txids, v.cands, v.best = txids, cands, best
	defer func() { v.txids, v.cands, v.best = nil, nil, nil }() // hold no caller's slices
	first := d.cfg.Source.FirstOffset()
	for j := 0; j < len(cands); {
		c := cands[j]
		if c.off < first {
			j++
			continue // retention removed it
		}
		// One read from c's offset answers every candidate up to the last
		// record it returns; a candidate with no record there (a gap: a
		// quarantined file) has none to match.
		v.k, v.last = j, 0
		n, err := d.cfg.Source.Read(c.off, verifyReadMsgs, verifyReadBytes, d.verFn)
		if err != nil {
			return err
		}
		if n == 0 {
			j++
			continue
		}
		for j < len(cands) && cands[j].off <= v.last {
			j++ // the read's first record is at c.off or after: j moves
		}
	}
	return nil
}
