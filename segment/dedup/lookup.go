package dedup

import (
	"fmt"
	"slices"

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
	best := make(map[int]hit, len(cands))
	if err := d.verifyCandidates(txids, cands, best); err != nil {
		return err
	}
	if len(d.runs) > 0 {
		cands = cands[:0]
		var offs []uint64
		for ri := len(d.runs) - 1; ri >= 0; ri-- {
			for i, h := range hashes {
				if _, done := best[i]; done || txids[i] == "" || !d.runs[ri].filter.MayContain(h) {
					continue
				}
				var err error
				if offs, err = d.runCandidates(ri, h, offs[:0]); err != nil {
					return fmt.Errorf("segment log %s: dedup index: %w", d.cfg.Dir, err)
				}
				for _, off := range offs {
					cands = append(cands, candidate{off, i})
				}
			}
		}
		if err := d.verifyCandidates(txids, cands, best); err != nil {
			return err
		}
	}
	for i, m := range best {
		found(i, m.offset, m.id)
	}
	return nil
}

// candidate is an offset the dedup index holds for txids[i]'s hash.
type candidate struct {
	off uint64
	i   int
}

// hit is the record found for an id.
type hit struct {
	offset uint64
	id     [16]byte
}

// verifyCandidates reads the records at the candidates' offsets and records
// in best[i], for each txids[i] a record really carries, the newest such
// record. Candidates are visited in offset order and each read decodes a run
// of segments once for all the candidates it reaches.
func (d *Index) verifyCandidates(txids []string, cands []candidate, best map[int]hit) error {
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
		var last uint64
		k := j
		n, err := d.cfg.Source.Read(c.off, verifyReadMsgs, verifyReadBytes, func(off uint64, txid string, id [16]byte) {
			last = off
			for k < len(cands) && cands[k].off < off {
				k++
			}
			for ; k < len(cands) && cands[k].off == off; k++ {
				if txid == txids[cands[k].i] {
					best[cands[k].i] = hit{off, id} // candidates ascend: the last match is the newest
				}
			}
		})
		if err != nil {
			return err
		}
		if n == 0 {
			j++
			continue
		}
		for j < len(cands) && cands[j].off <= last {
			j++ // the read's first record is at c.off or after: j moves
		}
	}
	return nil
}
