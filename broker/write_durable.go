package broker

import (
	"fmt"
	"math"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/lsn"
)

// The one rule of every answer that says "stored" (issue 21): an item is
// answered `queued` or `duplicate` only once the record that stores it is
// durable under the sync policy, and no offset is published (pops,
// GET /api/v1/messages, counts) before it is durable.
//
// A `queued` item waits for its own commit-log entry. A `duplicate` found in
// the partition's log may point at a record whose push is still waiting for
// its commit: a retry after a lost answer, sent while the original is inside
// its fdatasync, used to be answered at once and its offsets published, and
// a crash then lost what both clients had been told was stored. So every
// dedup lookup of every path (push, transaction, a stream cycle's sink
// pushes) goes through findStored, which returns with its hits the ticket
// that must be durable before any of them is answered: the partition's tail
// (the ticket of the last commit-log entry that appended to its log, set
// under the partition lock by appendLogged), or nil when every hit is below
// the visible mark (published, hence durable already: the common retry).
// Entries become durable in LSN order, so the tail covers every record below
// the log's next offset as read under the same lock hold, the original
// among them.

// storedTx is a transactionId already in the partition's log: its message id
// and offset.
type storedTx struct {
	id  [16]byte
	off uint64
	ok  bool
}

// findStored looks up txids in p's dedup index with one call (one lock,
// overlapping cache misses, one read to verify a whole retried batch).
// stored[k] answers txids[k] ("" is never stored); stored is nil when none
// is. hashes[k] is index.HashTxn(txids[k]) (0 for ""), or nil to compute
// them. wait is what a hit's answer waits for (see above): the zero ticket
// when nothing.
// The caller holds p.mu, so nothing is appended between the lookup and its
// use.
//
// Errors: the dedup index's, wrapped with the queue and partition (the
// caller decides whether it is damage: storageErr).
func (b *Broker) findStored(p *partition, txids []string, hashes []uint64) (stored []storedTx, wait walTicket, err error) {
	vis := p.visible.Load()
	err = p.log.FindTransactionsHashed(txids, hashes, func(k int, off uint64, id [16]byte) {
		if stored == nil {
			stored = make([]storedTx, len(txids))
		}
		stored[k] = storedTx{id: id, off: off, ok: true}
		if off >= vis {
			wait = p.tail
		}
	})
	if err != nil {
		return nil, walTicket{}, fmt.Errorf("queue %s partition %s: dedup lookup: %w", p.q.name, p.name, err)
	}
	return stored, wait, nil
}

// findStoredOne is findStored for one transactionId.
func (b *Broker) findStoredOne(p *partition, txid string) (storedTx, walTicket, error) {
	stored, wait, err := b.findStored(p, []string{txid}, []uint64{index.HashTxn(txid)})
	if err != nil || stored == nil {
		return storedTx{}, walTicket{}, err
	}
	return stored[0], wait, nil
}

// later returns whichever of a and b has the higher LSN (nil counts as
// none): waiting for it covers both.
func later(a, b walTicket) walTicket {
	if !a.Appended() || b.Appended() && b.LSN > a.LSN {
		return b
	}
	return a
}

// failedTicket is a partition's tail after a record went into its log with
// no commit-log entry to cover it (appendLogged): a duplicate of that record
// must never be answered `duplicate`, so its wait fails, and it sorts after
// every real ticket (later) so no other wait hides it.
func failedTicket(err error) walTicket { return lsn.NewTicket(math.MaxUint64, failedWait{err}) }

// failedWait is a failedTicket's Waiter.
type failedWait struct{ err error }

func (w failedWait) Wait() error { return w.err }
