package segment

import (
	"fmt"
	"sync"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/segment/dedup"
)

// The Log's dedup index lives in package dedup (its files, runs, merges and
// lookups); this file is the seam: the Log as its Source, the hooks into
// the HandleCache's handle and memory budgets, and the Log's exported
// lookups.

// dedupFileName is the dedup index file in a partition directory.
const dedupFileName = dedup.FileName

// dedupRunEntries and dedupFileMinRecords configure each Log's dedup index
// (dedup.Config) when it is made: variables so tests can seal small runs
// and give small logs a dedup.idx.
var (
	dedupRunEntries     = dedup.DefaultRunEntries
	dedupFileMinRecords = dedup.DefaultFileMinRecords
)

// initDedup gives l's dedup index its configuration (newLog).
func (l *Log) initDedup() {
	l.dedup.Init(dedup.Config{
		FS:             l.fs,
		Dir:            l.dir,
		Source:         dedupSource{l},
		RunEntries:     dedupRunEntries,
		FileMinRecords: dedupFileMinRecords,
		Handles:        func(delta int) { l.cache.adjust(l, delta) },
		Memory:         func(n int64) { l.cache.dedupSet(l, n) },
		Touch:          func() { l.dref.Store(true) },
		Rebuilt: func(why string) {
			if l.opts.OnRecover != nil {
				l.opts.OnRecover(l.dir, &RecoveryReport{DedupRebuilt: why})
			}
		},
		Closed: func() error {
			if l.closed.Load() {
				return ErrClosed
			}
			return nil
		},
	})
}

// dedupSource is a Log as the records its dedup index reads and verifies.
type dedupSource struct{ l *Log }

func (s dedupSource) FirstOffset() uint64 { return s.l.FirstOffset() }
func (s dedupSource) NextOffset() uint64  { return s.l.NextOffset() }

func (s dedupSource) Read(from uint64, maxMsgs, maxBytes int, fn func(uint64, string, [16]byte)) (int, error) {
	rb := verifyBuffers.Get().(*ReadBuffer)
	defer func() {
		if len(rb.chunks) == 1 && cap(rb.chunks[0]) == chunkSize {
			rb.Reset()
			verifyBuffers.Put(rb) // not one a large record grew
		}
	}()
	msgs, err := s.l.Read(from, maxMsgs, maxBytes, rb)
	if err != nil {
		return 0, err
	}
	for i := range msgs {
		fn(msgs[i].Offset, msgs[i].TransactionID, msgs[i].ID)
	}
	return len(msgs), nil
}

// verifyBuffers recycles the read buffers of the dedup index's reads: every
// load of a released Log verifies one entry, and a fresh buffer's 256 KiB
// arena per load was 11 % of a push's CPU (allocation and GC) with 100,000
// partitions taking turns in the HandleCache (issue 14).
var verifyBuffers = sync.Pool{New: func() any { return new(ReadBuffer) }}

// FindTransaction looks txid up in the dedup index and returns the offset and
// message id of the newest retained record carrying it. Hash matches are
// verified by reading the record, so a collision never yields a wrong answer.
// The first call loads the index (runs, file, and a scan of the uncovered
// tail). Safe concurrently with Append and Read. FindTransactions does many
// at once.
func (l *Log) FindTransaction(txid string) (offset uint64, id [16]byte, ok bool, err error) {
	if txid == "" {
		return 0, id, false, nil // records without a transaction id are never indexed
	}
	err = l.FindTransactions([]string{txid}, func(_ int, off uint64, mid [16]byte) {
		offset, id, ok = off, mid, true
	})
	return offset, id, ok, err
}

// FindTransactions is FindTransaction for many transaction ids under one lock of the dedup
// index: found(i, offset, id) is called once for each txids[i] that a retained record carries,
// with the newest such record's offset and message id. Empty ids are skipped (dedup.Index.Find).
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
	return l.dedup.Find(txids, hashes, found)
}

// dedupAppend records the transaction ids of a just-published segment.
func (l *Log) dedupAppend(base uint64, recs []Record) {
	l.dedup.Append(base, len(recs), func(i int) uint64 {
		r := &recs[i]
		if r.TransactionID == "" {
			return 0
		}
		if r.TxHash != 0 {
			return r.TxHash
		}
		return index.HashTxn(r.TransactionID)
	})
}

// DedupLoaded reports whether l's dedup index is in memory: it stays there
// when the HandleCache closes l's handles (Loaded false), until Release,
// Close or the dedup budget drops it.
func (l *Log) DedupLoaded() bool { return l.dedup.InMemory() }
