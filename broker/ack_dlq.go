package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/recovery"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// dlqItem is one message to dead-letter.
type dlqItem struct {
	offset  uint64
	group   string
	errMsg  string
	retries int64
}

// buildDLQRecordsLocked reads the messages of items from p and returns their
// DLQ records. keyPrefix "" gives every entry the key of its (partition,
// offset, group), ackDLQKey; a transaction passes its id so that a replay
// finds what it already wrote. The caller holds p.mu.
func (b *Broker) buildDLQRecordsLocked(p *partition, items []dlqItem, failedAt int64, defaultErr, keyPrefix string) ([]segment.Record, error) {
	buf := readBufPool.Get().(*segment.ReadBuffer)
	defer func() { buf.Reset(); readBufPool.Put(buf) }()
	recs := make([]segment.Record, 0, len(items))
	for i, it := range items {
		m, err := readMessageLocked(p, it.offset, buf)
		if err != nil {
			return nil, err
		}
		errMsg := it.errMsg
		if errMsg == "" {
			errMsg = defaultErr
		}
		meta := walentry.DLQMeta{PartitionID: p.id, CreatedAt: m.TimestampMicros, FailedAt: failedAt, RetryCount: it.retries,
			Offset: it.offset, Group: it.group, Error: errMsg, TransactionID: strings.Clone(m.TransactionID)}
		key := ackDLQKey(p.id, it.offset, it.group)
		if keyPrefix != "" {
			key = fmt.Sprintf("%s/%d", keyPrefix, i)
		}
		recs = append(recs, segment.Record{ID: m.ID, TransactionID: key, TraceID: strings.Clone(m.TraceID),
			ProducerSub: strings.Clone(m.ProducerSub), Payload: append([]byte(nil), m.Payload...), Extra: meta.Encode(nil)})
	}
	return recs, nil
}

// ackDLQKey is the key of the dead letter an ack writes for the message at
// offset of partition for group: "ack/<partition id>/<offset>/<xxhash64 of
// group, hex>". One message fails into a group's DLQ once: the dead letter's
// commit-log entry and the checkpoint that moves the cursor past the message
// are two entries, so a crash between their syncs keeps the dead letter but
// delivers the message again, and its next failure finds the key stored
// instead of writing a second dead letter (Queen writes both in one
// transaction; the power-loss harness, fsck/powertest, found the twin).
func ackDLQKey(partition [16]byte, offset uint64, group string) string {
	return fmt.Sprintf("ack/%s/%d/%016x", uuidString(partition), offset, xxhash.Sum64String(group))
}

// writeDLQLocked dead-letters items of p (spec 4.5), each once per (offset,
// group): an item whose dead letter is stored already (ackDLQKey) is skipped.
// The flush pass syncs the DLQ log; its commit-log entry is the durability.
// The caller holds p.mu.
func (b *Broker) writeDLQLocked(p *partition, items []dlqItem, failedAt int64, defaultErr, keyPrefix string) error {
	recs, err := b.buildDLQRecordsLocked(p, items, failedAt, defaultErr, keyPrefix)
	if err != nil {
		return err
	}
	return b.appendDLQ(p.q, failedAt, recs, true, false)
}

// dlqLogLocked returns q's DLQ log, opening it (creating it if create) on
// first use. The caller holds q.dlqMu.
func (b *Broker) dlqLogLocked(q *queue, create bool) (*segment.Log, error) {
	if q.dlq != nil {
		return q.dlq, nil
	}
	dir := filepath.Join(b.dir, meta.DLQDir, q.idStr)
	ok, err := existsDir(b.fs, dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("queue %s: dlq: %w", q.name, err)
	case !ok && !create:
		return nil, nil
	case !ok:
		if err := b.makeDLQDir(q, dir); err != nil {
			return nil, err
		}
	}
	opts := segment.Options{MaxFileBytes: b.cfg.MaxSegmentFileSize, FS: b.fs, DeferRotationSync: true,
		QuarantineDir: filepath.Join(b.dir, layout.Quarantine, layout.DLQ), OnRecover: b.logSegmentRecovery}
	var l *segment.Log
	var rep *segment.RecoveryReport
	if b.walScan.bases != nil {
		l, rep, err = b.openByPlan(q.id, recovery.DLQ, dir, opts) // recovery: cut to what is durable
		if err == nil {
			raiseTo(&q.dlqCommitted, l.NextOffset()) // all of it, on a replicated node (follow_commit.go)
		}
	} else {
		l, rep, err = segment.Open(dir, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: dlq: %w", q.name, err)
	}
	if rep.Repaired() {
		b.logSegmentRecovery(dir, rep)
	}
	q.dlq = l
	return l, nil
}

// makeDLQDir makes q's DLQ directory with its DESCRIPTOR (synced, then the
// parent synced) before anything is appended, so the dead letters always
// say which queue they belong to (package meta).
func (b *Broker) makeDLQDir(q *queue, dir string) error {
	err := b.fs.MkdirAll(dir)
	if err == nil {
		err = meta.WriteDescriptor(b.fs, dir, dlqDescriptor(q), true)
	}
	if err != nil {
		// A directory left without its DESCRIPTOR would be opened as it is
		// by the next try (a full disk, issue 21): remove it, so the next
		// try makes both.
		if rerr := b.fs.RemoveAll(dir); rerr != nil {
			b.log.Warn().Err(rerr).Str("dir", dir).Msg("dlq: removing the directory of a failed creation")
		}
		return fmt.Errorf("queue %s: dlq: %w", q.name, err)
	}
	b.noteDir(dir) // synced by the next flush pass; the commit log covers it until then
	return nil
}

// appendDLQ appends recs to q's DLQ log as one segment and, unless replay,
// the segment to the commit log (walDLQ); the flush pass syncs the DLQ file.
// With dedup, records whose key is already there are skipped (an ack's dead
// letter written before a crash, a transaction's at its replay). replay is a
// transaction's redo at start-up: its commit-log entry covers the records.
func (b *Broker) appendDLQ(q *queue, ts int64, recs []segment.Record, dedup, replay bool) error {
	if len(recs) == 0 {
		return nil
	}
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, true)
	if err != nil {
		return b.noSpace(fmt.Sprintf("queue %s: its dead-letter directory", q.name), err)
	}
	if dedup {
		kept := recs[:0:0]
		for _, r := range recs {
			_, _, ok, err := l.FindTransaction(r.TransactionID)
			if err != nil {
				return fmt.Errorf("queue %s: dlq: %w", q.name, err)
			}
			if !ok {
				kept = append(kept, r)
			}
		}
		if recs = kept; len(recs) == 0 {
			return nil
		}
	}
	ts = max(ts, l.LastTimestamp())
	if replay {
		// Replaying a transaction at start-up: its commit-log entry covers
		// the records, and the recovery flush syncs them.
		if _, err := l.Append(ts, recs); err != nil {
			return fmt.Errorf("queue %s: dlq append: %w", q.name, err)
		}
	} else {
		entry := append(make([]byte, 0, 64), q.id[:]...)
		var first uint64
		first, entry, err = l.AppendTo(entry, ts, recs)
		if err != nil {
			return b.noSpace(fmt.Sprintf("queue %s: its dead-letter log", q.name), fmt.Errorf("queue %s: dlq append: %w", q.name, err))
		}
		// Entries become durable in order: the checkpoint that moves a
		// cursor past these messages comes after this entry, so the dead
		// letters are durable first (spec 4.5).
		if _, err := b.wal.Append(walDLQ, entry); err != nil {
			err = fmt.Errorf("queue %s: dlq: commit log: %w", q.name, err)
			// No entry covers the dead letters: take them back out of the
			// file, so that the ack's retry writes them once (issue 21).
			if uerr := l.Unappend(first); uerr != nil {
				return errors.Join(err, fmt.Errorf("queue %s: dlq: take back the dead letters: %w", q.name, uerr))
			}
			return b.noSpace("the commit log", err)
		}
	}
	b.committer.Mark(l)
	b.stats.dlqMessages.Add(uint64(len(recs)))
	if !replay { // a replay's dead letters were counted in their minute before the restart
		q.an.DeadLettered(len(recs))
	}
	return nil
}

// readMessageLocked reads the message at off into buf. The caller holds p.mu.
func readMessageLocked(p *partition, off uint64, buf *segment.ReadBuffer) (segment.Message, error) {
	msgs, err := p.log.Read(off, 1, maxReadBytes, buf)
	if err != nil {
		return segment.Message{}, fmt.Errorf("queue %s partition %s: read offset %d: %w", p.q.name, p.name, off, err)
	}
	if len(msgs) == 0 || msgs[0].Offset != off {
		return segment.Message{}, fmt.Errorf("queue %s partition %s: offset %d is gone", p.q.name, p.name, off)
	}
	return msgs[0], nil
}
