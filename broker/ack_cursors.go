package broker

import (
	"context"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// Seek moves the group's cursor on every partition of queue where it has one
// (spec 7.1): toEnd to the newest message, else to the last message with
// createdAt <= tsMicros (the start of the partition if none). Leases are
// released and retry counters reset. Durable before it returns.
func (b *Broker) Seek(group, queueName string, toEnd bool, tsMicros int64) (SeekResult, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return SeekResult{}, err
	}
	defer b.leave()
	if group == "" {
		group = QueueModeGroup
	}
	q := b.lookupQueue(queueName)
	if q == nil {
		return SeekResult{}, nil
	}
	var res SeekResult
	var undo undoLog
	now := b.now().UnixMicro()
	for _, p := range q.partitionsSnapshot() {
		k := cursor.Key{Partition: p.id, Group: group}
		if p.isDamaged() {
			continue // its end is unknown; seeking it waits for the repair
		}
		p.mu.Lock()
		before, ok := b.cur.Get(k)
		if ok && !p.deleted {
			to := p.visible.Load() - 1
			if !toEnd {
				to = min(p.log.LastOffsetAtOrBefore(tsMicros), to)
			}
			b.cur.Set(k, lease.State{Committed: to})
			undo.note(p, k, before, lease.State{Committed: to})
			b.cursorChanged(p, group)
			res.PartitionsUpdated++
		}
		p.mu.Unlock()
		if ok {
			// A backward seek must make the partition a candidate again.
			b.touchGroup(p, group, now)
		}
	}
	if res.PartitionsUpdated > 0 {
		if err := b.cur.Wait(); err != nil {
			b.undoCursorChanges(undo) // not durable: as if it never happened (issue 10)
			return SeekResult{}, b.closedErr(err)
		}
	}
	return res, nil
}

// SeekPartition moves one partition's cursor to its newest message and
// releases its lease (spec 7.2). Errors: NotFound("Partition not found").
func (b *Broker) SeekPartition(group, queueName, partitionName string) (PartitionSeekResult, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return PartitionSeekResult{}, err
	}
	defer b.leave()
	if group == "" {
		group = QueueModeGroup
	}
	q := b.lookupQueue(queueName)
	var p *partition
	if q != nil {
		p = q.partition(partitionName)
	}
	if p == nil {
		return PartitionSeekResult{}, NotFound("Partition not found")
	}
	if err := p.damagedErr(); err != nil {
		return PartitionSeekResult{}, err
	}
	p.mu.Lock()
	to := p.visible.Load() - 1
	k := cursor.Key{Partition: p.id, Group: group}
	var undo undoLog
	if before, ok := b.cur.Get(k); ok {
		undo.note(p, k, before, lease.State{Committed: to})
	}
	b.cur.Set(k, lease.State{Committed: to})
	b.cursorChanged(p, group)
	ts := p.log.LastTimestamp()
	p.mu.Unlock()
	if err := b.cur.Wait(); err != nil {
		b.undoCursorChanges(undo) // not durable: as if it never happened (issue 10)
		return PartitionSeekResult{}, b.closedErr(err)
	}
	return PartitionSeekResult{Updated: true, CursorMovedToMicros: ts}, nil
}

// DeleteGroup deletes the group's cursors and leases on one queue, or on all
// queues when queueName is "" (spec 7.3, 7.4), and with deleteMetadata its
// subscription records, so its next first contact decides again. It returns
// the number of partitions whose cursor was deleted. Unknown groups are not an
// error. Durable before it returns.
func (b *Broker) DeleteGroup(group, queueName string, deleteMetadata bool) (int, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return 0, err
	}
	defer b.leave()
	if group == "" {
		group = QueueModeGroup
	}
	var keys []cursor.Key
	b.cur.Range(func(k cursor.Key, _ lease.State) bool {
		if k.Group == group {
			keys = append(keys, k)
		}
		return true
	})
	n := 0
	for _, k := range keys {
		p := b.lookupPartitionByID(k.Partition)
		if p == nil {
			b.cur.Delete(k)
			continue
		}
		if queueName != "" && p.q.name != queueName {
			continue
		}
		p.mu.Lock()
		b.cur.Delete(k)
		b.cursorChanged(p, k.Group)
		p.mu.Unlock()
		n++
	}
	if deleteMetadata {
		var drop []string
		b.cur.RangeSubscriptions(func(queue, g string, _ cursor.Subscription) bool {
			if g == group && (queueName == "" || queue == queueName) {
				drop = append(drop, queue)
			}
			return true
		})
		for _, qn := range drop {
			b.cur.DeleteSubscription(qn, group)
		}
	}
	// The next pop of the group is a first contact again: rebuild its ready set.
	for _, q := range b.sortedQueues() {
		if queueName == "" || q.name == queueName {
			q.mu.Lock()
			delete(q.groups, group)
			q.mu.Unlock()
		}
	}
	if err := b.cur.Wait(); err != nil {
		return n, b.closedErr(err)
	}
	return n, nil
}

// SetSubscriptionTimestamp rewrites the timestamp of every subscription record
// of group (all queues; spec 7.5) and returns how many it rewrote. It affects
// only partitions where the group has no cursor yet (those born later); seek
// moves existing cursors. A record of mode `all` becomes mode `timestamp`
// (an `all` record ignores its timestamp); `new` and `timestamp` keep their
// mode. Durable before it returns.
func (b *Broker) SetSubscriptionTimestamp(group string, tsMicros int64) (int, error) {
	if err := b.enterConsume(context.Background()); err != nil {
		return 0, err
	}
	defer b.leave()
	type rec struct {
		queue string
		sub   cursor.Subscription
	}
	var recs []rec
	b.cur.RangeSubscriptions(func(queue, g string, s cursor.Subscription) bool {
		if g == group {
			recs = append(recs, rec{queue, s})
		}
		return true
	})
	for _, r := range recs {
		s := r.sub
		s.TimestampMicros = tsMicros
		if s.Mode == cursor.SubAll {
			s.Mode = cursor.SubTimestamp
		}
		b.cur.SetSubscription(r.queue, group, s)
	}
	if len(recs) > 0 {
		if err := b.cur.Wait(); err != nil {
			return 0, b.closedErr(err)
		}
	}
	return len(recs), nil
}
