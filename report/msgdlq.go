package report

import (
	"fmt"
	"sync"

	"github.com/combmq/comb/broker"
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

// dlqIndexes holds one dlqIndex per queue id.
type dlqIndexes struct {
	mu sync.Mutex
	m  map[[16]byte]*dlqIndex
}

// of returns q's index, making it on first use; making one forgets the
// indexes of queues that are gone (live is asked only then).
func (x *dlqIndexes) of(q broker.QueueView, live func() map[[16]byte]bool) *dlqIndex {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = make(map[[16]byte]*dlqIndex)
	}
	d := x.m[q.ID()]
	if d == nil {
		pruneGone(x.m, live)
		d = &dlqIndex{}
		x.m[q.ID()] = d
	}
	return d
}

// withDLQHits calls fn with the dead-letterings of partition pid's messages
// (offset → hits), brought up to date with its queue's DLQ log, under the
// index's lock (fn must not keep or modify the map; nil when there are none).
func (rs *Reports) withDLQHits(q broker.QueueView, pid [16]byte, fn func(map[uint64][]dlqHit)) error {
	d := rs.dlqHits.of(q, rs.liveQueueIDs)
	d.mu.Lock()
	defer d.mu.Unlock()
	found := false
	var readErr error
	err := q.WithDLQ(func(l broker.DLQLog) {
		found = true
		readErr = d.catchUp(q, l)
		if readErr == nil {
			fn(d.hits[pid])
		}
	})
	switch {
	case err != nil || !found:
		fn(nil)
		return err
	case readErr != nil:
		return readErr
	}
	return nil
}

// catchUp indexes the entries of q's DLQ log l appended since the last call
// (all of them after retention moved its start).
func (d *dlqIndex) catchUp(q broker.QueueView, l broker.DLQLog) error {
	if first := l.FirstOffset(); d.hits == nil || first > d.first {
		d.first, d.next, d.hits = first, first, make(map[[16]byte]map[uint64][]dlqHit)
	}
	buf := new(segment.ReadBuffer)
	for d.next < l.NextOffset() {
		msgs, err := l.Read(d.next, 1024, 8<<20, buf)
		if err != nil {
			return fmt.Errorf("queue %s: dlq read: %w", q.Name(), err)
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
	return nil
}
