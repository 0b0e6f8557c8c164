package segment

import (
	"sync"

	"github.com/combmq/comb/index"
)

// dedupState is the Log's dedup index: transactionId hash → offsets, loaded on
// the first FindTransaction (so Open stays cheap and idle partitions hold no
// table) from dedup.idx plus a scan of the segments the file does not cover.
// Append keeps it current once loaded and appends new entries to the file in
// batches. The file is a cache and never synced: entries at or past the
// offset the log had at Open may describe records a crash took back, so they
// are dropped on load.
type dedupState struct {
	mu       sync.Mutex
	loaded   bool
	table    index.Table
	covered  uint64 // every offset ≤ covered is in the table (or has no transaction id)
	openNext uint64 // NextOffset at Open
	f        file
	pending  []byte // encoded entries not yet written to f
}

// dedupFlushBytes batches dedup file writes: one write per ~4,000 entries.
const dedupFlushBytes = 64 << 10

// FindTransaction looks txid up in the dedup index and returns the offset and
// message id of the newest retained record carrying it. Hash matches are
// verified by reading the record, so a collision never yields a wrong answer.
// The first call loads the index (file plus a scan of the uncovered tail).
// Safe concurrently with Append and Read. FindTransactions does many at once.
func (l *Log) FindTransaction(txid string) (offset uint64, id [16]byte, ok bool, err error) {
	if txid == "" {
		return 0, id, false, nil // records without a transaction id are never indexed
	}
	err = l.FindTransactions([]string{txid}, func(_ int, off uint64, mid [16]byte) {
		offset, id, ok = off, mid, true
	})
	return offset, id, ok, err
}

// dedupLoadLocked reads dedup.idx and indexes the segments after it.
func (l *Log) dedupLoadLocked() error {
	d := &l.dedup
	path := join(l.dir, dedupFileName)
	f, err := openAppend(l.fs, path, true)
	if err != nil {
		return err
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return err
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && size > 0 {
		_ = f.Close()
		return err
	}
	first := l.FirstOffset()
	keep := int64(0)
	if index.CheckDedupHeader(b) == nil {
		n := index.ScanDedup(b[index.DedupHeaderSize:], func(h, off uint64) bool {
			if off >= d.openNext {
				return false
			}
			if off >= first {
				d.table.Insert(h, off)
			}
			d.covered = off
			return true
		})
		keep = int64(index.DedupHeaderSize + n)
	}
	if keep < size || size == 0 {
		if err := f.Truncate(keep); err != nil {
			_ = f.Close()
			return err
		}
		if keep == 0 {
			var hdr [index.DedupHeaderSize]byte
			index.PutDedupHeader(hdr[:])
			if _, err := f.Write(hdr[:]); err != nil {
				_ = f.Close()
				return err
			}
		}
	}
	d.f = f
	l.cache.adjust(l, 1)
	// Index what the file does not cover. Append publishes a segment before
	// it takes d.mu, so everything it skipped while !loaded is seen here.
	var rb ReadBuffer
	for from := max(d.covered+1, first); ; {
		msgs, err := l.Read(from, 4096, 0, &rb)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			break
		}
		for i := range msgs {
			d.addLocked(msgs[i].TransactionID, msgs[i].Offset)
		}
		from = msgs[len(msgs)-1].Offset + 1
	}
	d.loaded = true
	return d.flushLocked()
}

func (d *dedupState) addLocked(txid string, off uint64) {
	if off <= d.covered {
		return
	}
	d.covered = off
	if txid == "" {
		return
	}
	d.addHashLocked(index.HashTxn(txid), off)
}

// addHashLocked indexes a record whose (non-empty) transaction id hashes to h.
func (d *dedupState) addHashLocked(h, off uint64) {
	d.table.Insert(h, off)
	d.pending = index.AppendDedupEntry(d.pending, h, off)
}

func (d *dedupState) flushLocked() error {
	if len(d.pending) == 0 || d.f == nil {
		return nil
	}
	_, err := d.f.Write(d.pending)
	d.pending = d.pending[:0]
	return err
}

// dedupAppend records the transaction ids of a just-published segment.
func (l *Log) dedupAppend(base uint64, recs []Record) {
	d := &l.dedup
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.loaded {
		return
	}
	// Grow once, then touch every home slot before inserting, so the cache
	// misses of a whole segment's inserts overlap (see index.Table.Prefetch).
	var hashBuf [128]uint64
	hashes := hashBuf[:0]
	for i := range recs {
		hashes = append(hashes, index.HashTxn(recs[i].TransactionID))
	}
	d.table.Reserve(len(recs))
	d.table.Prefetch(hashes)
	for i := range recs {
		off := base + uint64(i)
		if off <= d.covered {
			continue
		}
		d.covered = off
		if recs[i].TransactionID != "" {
			d.addHashLocked(hashes[i], off)
		}
	}
	if len(d.pending) >= dedupFlushBytes {
		// A failed write only costs a rescan on the next load.
		_ = d.flushLocked()
	}
}

// dedupFlush writes pending entries and closes the file (Close).
func (l *Log) dedupFlush() error {
	d := &l.dedup
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.flushLocked()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	l.cache.adjust(l, -1)
	d.f, d.loaded = nil, false
	d.table = index.Table{}
	// Everything in the file describes published records of this process:
	// a reload after Release keeps it all and rescans only past it.
	d.covered, d.openNext = 0, l.NextOffset()
	return err
}
