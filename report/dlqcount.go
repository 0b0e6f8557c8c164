package report

import (
	"sync"

	"github.com/combmq/comb/broker"
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

// dlqCountCache holds one dlqPartCounts per queue id. Its lock is taken
// before the queue's DLQ is held (broker.QueueView.WithDLQ), never inside.
type dlqCountCache struct {
	mu sync.Mutex
	m  map[[16]byte]*dlqPartCounts
}

// of returns the counts of q, making them on first use; making them forgets
// the counts of queues that are gone (live is asked only then).
func (x *dlqCountCache) of(q broker.QueueView, live func() map[[16]byte]bool) *dlqPartCounts {
	if x.m == nil {
		x.m = make(map[[16]byte]*dlqPartCounts)
	}
	c := x.m[q.ID()]
	if c == nil {
		pruneGone(x.m, live)
		c = &dlqPartCounts{}
		x.m[q.ID()] = c
	}
	return c
}

// pruneGone deletes the entries of m whose queue is not live.
func pruneGone[T any](m map[[16]byte]T, live func() map[[16]byte]bool) {
	if len(m) == 0 {
		return
	}
	ids := live()
	for id := range m {
		if !ids[id] {
			delete(m, id)
		}
	}
}

// liveQueueIDs returns the ids of the live queues.
func (rs *Reports) liveQueueIDs() map[[16]byte]bool {
	qs := rs.v.Queues()
	out := make(map[[16]byte]bool, len(qs))
	for _, q := range qs {
		out[q.ID()] = true
	}
	return out
}

// dlqCountsByPartition returns q's DLQ entries per partition id (a copy).
// Entries whose metadata does not decode count for no partition (the queue
// total, from the log's offsets, still has them).
func (rs *Reports) dlqCountsByPartition(q broker.QueueView) map[[16]byte]int64 {
	rs.dlqCounts.mu.Lock()
	defer rs.dlqCounts.mu.Unlock()
	c := rs.dlqCounts.of(q, rs.liveQueueIDs) // before WithDLQ: the registry lock is not taken under a DLQ's
	var out map[[16]byte]int64
	_ = q.WithDLQ(func(l broker.DLQLog) {
		first, next := l.FirstOffset(), l.NextOffset()
		if c.by == nil || first != c.from || next < c.next {
			*c = dlqPartCounts{from: first, next: first, by: make(map[[16]byte]int64)}
		}
		buf := new(segment.ReadBuffer)
		for c.next < next {
			msgs, err := l.Read(c.next, 1024, 8<<20, buf)
			if err != nil || len(msgs) == 0 {
				rs.v.Logger().Warn().Err(err).Str("queue", q.Name()).Msg("dlq: counting entries per partition stopped short")
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
		out = make(map[[16]byte]int64, len(c.by))
		for id, n := range c.by {
			out[id] = n
		}
	})
	return out
}
