package segment

import (
	"fmt"
	"slices"
	"sync"

	"github.com/combmq/comb/index"
)

// verifyReadMsgs and verifyReadBytes bound one read made to verify dedup candidates: enough for
// a whole segment of a typical push, so a retried request of 100 items decodes its segment
// once, not 100 times.
const (
	verifyReadMsgs  = 1024
	verifyReadBytes = 4 << 20
)

var verifyBufPool = sync.Pool{New: func() any { return new(ReadBuffer) }}

// FindTransactions is FindTransaction for many transaction ids under one lock of the dedup
// index: found(i, offset, id) is called once for each txids[i] that a retained record carries,
// with the newest such record's offset and message id. Empty ids are skipped. The active table
// is searched first; ids it does not answer are looked up in the sealed runs whose filter may
// hold them (dedup_run.go). Hash matches are verified by reading the records (so a collision
// or a filter false positive never yields a wrong answer); candidates are visited in offset
// order and each read decodes a run of segments once for all of them.
// Safe concurrently with Append and Read.
//
// A log holding no record answers at once, without opening (or creating) the
// dedup file: a new partition's first push costs no dedup handle (issue 7).
func (l *Log) FindTransactions(txids []string, found func(i int, offset uint64, id [16]byte)) error {
	return l.FindTransactionsHashed(txids, nil, found)
}

// FindTransactionsHashed is FindTransactions given hashes[i] = index.HashTxn(txids[i]) (0 for
// an empty id), so that a caller that appends the same ids next (Record.TxHash) hashes each
// once. A nil hashes computes them.
func (l *Log) FindTransactionsHashed(txids []string, hashes []uint64, found func(i int, offset uint64, id [16]byte)) error {
	if l.empty() && !l.closed.Load() {
		return nil
	}
	if err := l.pin(); err != nil {
		return fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	d := &l.dedup
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if !d.loaded {
		if err := l.dedupLoadLocked(); err != nil {
			return fmt.Errorf("segment log %s: dedup index: %w", l.dir, err)
		}
	}
	l.dref.Store(true)
	defer d.accountLocked(l) // a load, a trim or a rebuilt run changed what memory holds
	if first := l.FirstOffset(); first != d.trimmedAt {
		d.trimLocked(l, first)
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
	var cands []dedupCandidate
	if d.table.Len() > 0 {
		d.table.Prefetch(hashes)
		for i, h := range hashes {
			if txids[i] == "" {
				continue
			}
			d.table.Lookup(h, func(off uint64) bool {
				cands = append(cands, dedupCandidate{off, i})
				return true
			})
		}
	}
	best := make(map[int]Message, len(cands))
	if err := l.verifyCandidates(txids, cands, best); err != nil {
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
				if offs, err = d.runCandidates(l, ri, h, offs[:0]); err != nil {
					return fmt.Errorf("segment log %s: dedup index: %w", l.dir, err)
				}
				for _, off := range offs {
					cands = append(cands, dedupCandidate{off, i})
				}
			}
		}
		if err := l.verifyCandidates(txids, cands, best); err != nil {
			return err
		}
	}
	for i, m := range best {
		found(i, m.Offset, m.ID)
	}
	return nil
}

// dedupCandidate is an offset the dedup index holds for txids[i]'s hash.
type dedupCandidate struct {
	off uint64
	i   int
}

// verifyCandidates reads the records at the candidates' offsets and records
// in best[i], for each txids[i] a record really carries, the newest such
// record. Candidates are visited in offset order and each read decodes a run
// of segments once for all of them.
func (l *Log) verifyCandidates(txids []string, cands []dedupCandidate, best map[int]Message) error {
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b dedupCandidate) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	rb := verifyBufPool.Get().(*ReadBuffer)
	defer verifyBufPool.Put(rb)
	first := l.FirstOffset()
	var msgs []Message
	for _, c := range cands {
		if c.off < first {
			continue // retention removed it
		}
		m, ok := messageAt(msgs, c.off)
		if !ok {
			var err error
			if msgs, err = l.Read(c.off, verifyReadMsgs, verifyReadBytes, rb); err != nil {
				return err
			}
			if m, ok = messageAt(msgs, c.off); !ok {
				continue
			}
		}
		if m.TransactionID == txids[c.i] {
			best[c.i] = Message{Offset: m.Offset, Record: Record{ID: m.ID}} // candidates ascend: the last match is the newest
		}
	}
	return nil
}

// messageAt finds offset off in msgs, a run read by one Read (ascending offsets).
func messageAt(msgs []Message, off uint64) (*Message, bool) {
	if len(msgs) == 0 || off < msgs[0].Offset || off > msgs[len(msgs)-1].Offset {
		return nil, false
	}
	if k := off - msgs[0].Offset; k < uint64(len(msgs)) && msgs[k].Offset == off {
		return &msgs[k], true
	}
	for k := range msgs { // a gap inside the run (a quarantined file): search
		if msgs[k].Offset == off {
			return &msgs[k], true
		}
	}
	return nil, false
}
