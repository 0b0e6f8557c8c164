package broker

import (
	"fmt"
	"sync"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/segment"
)

// dlqHit is one dead-lettering of a message by one group.
type dlqHit struct {
	group        string
	err          string
	failedMicros int64
	retries      int64
}

// dlqIndex maps the messages of one queue's DLQ log back to (partition,
// offset), so that the message list and detail can say dead_letter and give
// the error without reading the DLQ per request. It is built on first use
// and then only reads the DLQ entries appended since (so a request costs the
// dead-letterings since the previous one); retention of the DLQ log (its
// first offset moving up) makes it start over.
type dlqIndex struct {
	mu    sync.Mutex
	first uint64                           // the DLQ log's first offset when indexed
	next  uint64                           // DLQ offsets below next are indexed
	hits  map[[16]byte]map[uint64][]dlqHit // partition id → message offset → dead-letterings
}

// dlqIndexes holds one dlqIndex per queue id (report_msgdlq.go).
type dlqIndexes struct {
	mu sync.Mutex
	m  map[[16]byte]*dlqIndex
}

func (x *dlqIndexes) of(q *queue) *dlqIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = make(map[[16]byte]*dlqIndex)
	}
	d := x.m[q.id]
	if d == nil {
		d = &dlqIndex{}
		x.m[q.id] = d
	}
	return d
}

// prune forgets the indexes of queues that are gone; liveIDs is called only
// when there are indexes to check.
func (x *dlqIndexes) prune(liveIDs func() map[[16]byte]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.m) == 0 {
		return
	}
	live := liveIDs()
	for id := range x.m {
		if !live[id] {
			delete(x.m, id)
		}
	}
}

// liveQueueIDs returns the ids of the live queues.
func (b *Broker) liveQueueIDs() map[[16]byte]bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make(map[[16]byte]bool, len(b.queues))
	for _, q := range b.queues {
		if !q.deleted.Load() {
			out[q.id] = true
		}
	}
	return out
}

// withDLQHits calls fn with the dead-letterings of partition pid's messages
// (offset → hits), brought up to date with its queue's DLQ log, under the
// index's lock (fn must not keep or modify the map; nil when there are none).
func (b *Broker) withDLQHits(q *queue, pid [16]byte, fn func(map[uint64][]dlqHit)) error {
	d := b.msgNotes.dlq.of(q)
	d.mu.Lock()
	defer d.mu.Unlock()
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, false)
	if err != nil || l == nil {
		fn(nil)
		return err
	}
	if first := l.FirstOffset(); d.hits == nil || first > d.first {
		d.first, d.next, d.hits = first, first, make(map[[16]byte]map[uint64][]dlqHit)
	}
	buf := new(segment.ReadBuffer)
	for d.next < l.NextOffset() {
		msgs, err := l.Read(d.next, 1024, 8<<20, buf)
		if err != nil {
			return fmt.Errorf("queue %s: dlq read: %w", q.name, err)
		}
		if len(msgs) == 0 {
			break
		}
		for i := range msgs {
			m, err := walentry.DecodeDLQMeta(msgs[i].Extra)
			if err != nil {
				continue // readDLQ logs these
			}
			pm := d.hits[m.PartitionID]
			if pm == nil {
				pm = make(map[uint64][]dlqHit)
				d.hits[m.PartitionID] = pm
			}
			pm[m.Offset] = append(pm[m.Offset], dlqHit{group: m.Group, err: m.Error, failedMicros: m.FailedAt, retries: m.RetryCount})
		}
		d.next = msgs[len(msgs)-1].Offset + 1
	}
	fn(d.hits[pid])
	return nil
}
