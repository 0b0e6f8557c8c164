package broker

import (
	"fmt"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/segment"
)

// ImportMessage is one message as another broker stored it.
type ImportMessage struct {
	ID              [16]byte
	TransactionID   string // required: the dedup key
	TraceID         string // "" = none
	ProducerSub     string // "" = none
	Payload         []byte // stored as given (a sealed payload already carries seal's 0x00 marker)
	CreatedAtMicros int64
}

// ImportMessages appends msgs, in the order given (the source's order), to queue's partition
// and returns how many it added. A message whose transactionId the partition holds already
// is skipped (a second import adds nothing), as is one repeated within msgs.
//
// Timestamps: a segment has one timestamp (segment.Message.TimestampMicros), so each run of
// consecutive messages with the same createdAt becomes one segment with that timestamp; a
// createdAt older than the partition's last timestamp is raised to it (timestamps of a
// partition never go backwards; a source in (created_at, id) order never needs it).
//
// Durability: every segment goes to the partition file and to the commit log as a push's does
// (appendLogged); ImportMessages returns once the last entry is durable, and only then are the
// messages visible. Errors: ErrBadRequest (an empty or too long transactionId), ErrNotFound
// (no such queue or partition), ErrClosed, storage errors (a retry is safe: dedup).
func (b *Broker) ImportMessages(queueName, partitionName string, msgs []ImportMessage) (int, error) {
	if err := b.enterWrite(); err != nil {
		return 0, err
	}
	defer b.leave()
	for i := range msgs {
		if msgs[i].TransactionID == "" {
			return 0, BadRequest("import: every message needs a transactionId")
		}
		if err := txidErr(msgs[i].TransactionID); err != nil {
			return 0, fmt.Errorf("import: %w", err)
		}
	}
	p, err := b.importPartition(queueName, partitionName)
	if err != nil {
		return 0, err
	}
	if err := p.damagedErr(); err != nil {
		return 0, err
	}
	p.mu.Lock()
	if p.deleted {
		p.mu.Unlock()
		return 0, NotFound("Partition not found")
	}
	txids := make([]string, len(msgs))
	hashes := make([]uint64, len(msgs))
	for i := range msgs {
		txids[i] = msgs[i].TransactionID
		hashes[i] = index.HashTxn(txids[i])
	}
	stored, _, err := b.findStored(p, txids, hashes)
	if err != nil {
		p.mu.Unlock()
		return 0, b.storageErr(p, err)
	}
	seen := make(map[string]struct{}, len(msgs))
	var last walTicket
	var next uint64
	var ts int64
	added, segBytes := 0, 0
	recs := make([]segment.Record, 0, len(msgs))
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		bp := entryBufs.Get().(*[]byte)
		var t walTicket
		first, err := b.appendLogged(p, ts, recs, bp, &t)
		if cap(*bp) <= maxPooledEntry {
			entryBufs.Put(bp)
		}
		if err != nil {
			return err
		}
		last, next = t, first+uint64(len(recs))
		added += len(recs)
		recs, segBytes = recs[:0], 0
		return nil
	}
	for i := range msgs {
		m := &msgs[i]
		if stored != nil && stored[i].ok {
			continue
		}
		if _, dup := seen[m.TransactionID]; dup {
			continue
		}
		seen[m.TransactionID] = struct{}{}
		mts := max(m.CreatedAtMicros, p.log.LastTimestamp())
		if len(recs) > 0 && (mts != ts || len(recs) >= importSegmentRecords || segBytes >= importSegmentBytes) {
			if err := flush(); err != nil {
				p.mu.Unlock()
				return added, err
			}
			mts = max(m.CreatedAtMicros, p.log.LastTimestamp())
		}
		ts = mts
		payload := m.Payload
		if payload == nil {
			payload = nullJSON
		}
		segBytes += len(payload) + len(m.TransactionID) + len(m.TraceID) + len(m.ProducerSub)
		recs = append(recs, segment.Record{ID: m.ID, TransactionID: m.TransactionID, TraceID: m.TraceID,
			ProducerSub: m.ProducerSub, Payload: payload, TxHash: hashes[i]})
	}
	err = flush()
	p.mu.Unlock()
	if err != nil {
		return added, err
	}
	if !last.Appended() {
		return 0, nil
	}
	if err := last.Wait(); err != nil {
		return added, fmt.Errorf("broker: import queue %s partition %s: commit log: %w", queueName, partitionName, err)
	}
	p.q.an.Ingested(added)
	b.stats.pushMessages.Add(uint64(added))
	if _, err := b.publishOrHold(p, next, ts); err != nil {
		return added, err
	}
	return added, nil
}

// An imported segment holds at most this many records and about this many bytes, however
// many messages share a createdAt: one commit-log entry each, far below commitlog.MaxEntry.
const (
	importSegmentRecords = 1000
	importSegmentBytes   = 4 << 20
)

// importPartition is queue's partition, or ErrNotFound.
func (b *Broker) importPartition(queueName, partitionName string) (*partition, error) {
	q := b.lookupQueue(queueName)
	if q == nil {
		return nil, NotFound("Queue not found")
	}
	p := q.partition(partitionName)
	if p == nil {
		return nil, NotFound("Partition not found")
	}
	return p, nil
}

// ScanPartition calls fn with every stored message of queue's partition in offset order
// (for `comb import --verify`): its offset, id, transactionId, payload as stored (sealed
// payloads sealed) and segment timestamp in µs. fn's slices are valid during the call only.
// Errors: ErrNotFound, read errors, fn's error.
func (b *Broker) ScanPartition(queueName, partitionName string, fn func(off uint64, id [16]byte, txid string, payload []byte, tsMicros int64) error) error {
	p, err := b.importPartition(queueName, partitionName)
	if err != nil {
		return err
	}
	buf := readBufPool.Get().(*segment.ReadBuffer)
	defer func() { buf.Reset(); readBufPool.Put(buf) }()
	for off := p.log.FirstOffset(); off < p.visible.Load(); {
		p.mu.Lock()
		msgs, err := p.log.Read(off, 1000, maxReadBytes, buf)
		p.mu.Unlock()
		if err != nil {
			return fmt.Errorf("queue %s partition %s: read offset %d: %w", queueName, partitionName, off, err)
		}
		if len(msgs) == 0 {
			return nil
		}
		for _, m := range msgs {
			if m.Offset >= p.visible.Load() {
				return nil
			}
			if err := fn(m.Offset, m.ID, m.TransactionID, m.Payload, m.TimestampMicros); err != nil {
				return err
			}
			off = m.Offset + 1
		}
	}
	return nil
}

// DLQCount is the number of entries in queue's DLQ (0 when it has none).
func (b *Broker) DLQCount(queueName string) (int64, error) {
	q := b.lookupQueue(queueName)
	if q == nil {
		return 0, NotFound("Queue not found")
	}
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, false)
	if err != nil || l == nil {
		return 0, err
	}
	return int64(l.NextOffset() - l.FirstOffset()), nil
}
