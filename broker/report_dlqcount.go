package broker

import (
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// dlqPartCounts counts a queue's DLQ entries by the partition their message
// came from, for the per-partition deadLetter of GET
// /api/v1/resources/queues/:queue (spec 8.4). The DLQ log only grows at its
// end and loses whole files at its start (retention), so the counts cover
// the offsets [from, next): a later ask reads only the entries appended since,
// and a moved start (retention) makes it count again from the new one. The
// cost of an ask is the entries appended since the last one; the memory, one
// map entry per partition that ever dead-lettered.
type dlqPartCounts struct {
	from, next uint64
	by         map[[16]byte]int64
}

// dlqCountsByPartition returns q's DLQ entries per partition id (a copy).
// Entries whose metadata does not decode count for no partition (the queue
// total, from the log's offsets, still has them).
func (b *Broker) dlqCountsByPartition(q *queue) map[[16]byte]int64 {
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, false)
	if err != nil || l == nil {
		return nil
	}
	c := &q.dlqByPart
	first, next := l.FirstOffset(), l.NextOffset()
	if c.by == nil || first != c.from || next < c.next {
		*c = dlqPartCounts{from: first, next: first, by: make(map[[16]byte]int64)}
	}
	buf := new(segment.ReadBuffer)
	for c.next < next {
		msgs, err := l.Read(c.next, 1024, 8<<20, buf)
		if err != nil || len(msgs) == 0 {
			b.log.Warn().Err(err).Str("queue", q.name).Msg("dlq: counting entries per partition stopped short")
			break
		}
		for i := range msgs {
			if meta, err := walentry.DecodeDLQMeta(msgs[i].Extra); err == nil {
				c.by[meta.PartitionID]++
			}
		}
		c.next = msgs[len(msgs)-1].Offset + 1
		buf.Reset()
	}
	out := make(map[[16]byte]int64, len(c.by))
	for id, n := range c.by {
		out[id] = n
	}
	return out
}
