package broker

import (
	"fmt"

	"github.com/combmq/comb/segment"
)

// ImportDLQEntry is one dead letter as another broker stored it: the message (by its
// transactionId in the partition), the group whose failure sent it there, the error text and
// retry count, and when it failed.
type ImportDLQEntry struct {
	Key            string // unique per entry at the source (Queen's dead_letter_queue.id): a second import skips it
	TransactionID  string
	Group          string
	Error          string
	RetryCount     int64
	FailedAtMicros int64
}

// ImportDLQ adds entries of queue's partition to the queue's DLQ (spec 4.5) and returns how
// many it added; an entry whose Key the DLQ holds already is skipped. The message of each
// entry must be stored in the partition (ImportMessages first): the DLQ record carries its
// id, payload and createdAt as a failure here would. Durable before it returns (the DLQ
// segment's commit-log entry, walDLQ, as appendDLQ writes it).
//
// Errors: ErrNotFound (queue, partition or message missing), ErrClosed, storage errors.
func (b *Broker) ImportDLQ(queueName, partitionName string, entries []ImportDLQEntry) (int, error) {
	if err := b.enterWrite(); err != nil {
		return 0, err
	}
	defer b.leave()
	p, err := b.importPartition(queueName, partitionName)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	p.mu.Lock()
	recs := make([]segment.Record, 0, len(entries))
	var failedAt int64
	for _, e := range entries {
		got, _, err := b.findStoredOne(p, e.TransactionID)
		if err == nil && !got.ok {
			err = NotFound(fmt.Sprintf("queue %s partition %s: dead-lettered message %s is not stored", queueName, partitionName, e.TransactionID))
		}
		var r []segment.Record
		if err == nil {
			r, err = b.buildDLQRecordsLocked(p, []dlqItem{{offset: got.off, group: e.Group, errMsg: e.Error, retries: e.RetryCount}},
				e.FailedAtMicros, "", "")
		}
		if err != nil {
			p.mu.Unlock()
			return 0, err
		}
		r[0].TransactionID = e.Key
		// buildDLQRecordsLocked stamps one failedAt for a batch; each entry keeps its own.
		recs = append(recs, r[0])
		failedAt = max(failedAt, e.FailedAtMicros)
	}
	p.mu.Unlock()
	return b.appendImportedDLQ(p.q, failedAt, recs)
}

// appendImportedDLQ is appendDLQ for an import: it skips records whose key is stored, and
// waits for the commit-log entry of those it appends.
func (b *Broker) appendImportedDLQ(q *queue, ts int64, recs []segment.Record) (int, error) {
	q.dlqMu.Lock()
	l, err := b.dlqLogLocked(q, true)
	if err != nil {
		q.dlqMu.Unlock()
		return 0, err
	}
	kept := recs[:0:0]
	for _, r := range recs {
		_, _, ok, err := l.FindTransaction(r.TransactionID)
		if err != nil {
			q.dlqMu.Unlock()
			return 0, fmt.Errorf("queue %s: dlq: %w", q.name, err)
		}
		if !ok {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		q.dlqMu.Unlock()
		return 0, nil
	}
	ts = max(ts, l.LastTimestamp())
	entry := append(make([]byte, 0, 64), q.id[:]...)
	_, entry, err = l.AppendTo(entry, ts, kept)
	if err != nil {
		q.dlqMu.Unlock()
		return 0, fmt.Errorf("queue %s: dlq append: %w", q.name, err)
	}
	t, err := b.wal.Append(walDLQ, entry)
	if err != nil {
		q.dlqMu.Unlock()
		return 0, fmt.Errorf("queue %s: dlq: commit log: %w", q.name, err)
	}
	b.committer.Mark(l)
	b.stats.dlqMessages.Add(uint64(len(kept)))
	q.dlqMu.Unlock()
	if err := t.Wait(); err != nil {
		return 0, fmt.Errorf("queue %s: dlq: commit log: %w", q.name, err)
	}
	return len(kept), nil
}
