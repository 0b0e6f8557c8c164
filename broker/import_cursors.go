package broker

import (
	"fmt"
	"strings"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// ImportCursor is one (partition, consumer group) position as another broker stored it.
type ImportCursor struct {
	Queue, Partition, Group string
	// LastTransactionID names the last consumed message by its transactionId ("" = nothing
	// consumed): the cursor becomes that message's offset, so the next pop starts after it.
	LastTransactionID string
	// LastID is that message's id, checked against the stored one (zero = not checked).
	LastID [16]byte
	// Lease, when its ID is not zero, is a live lease on the next Count messages after the
	// cursor, kept with its id and expiry so that an ack naming it succeeds here.
	Lease ImportLease
}

// ImportLease is a lease taken on the source broker.
type ImportLease struct {
	ID              [16]byte
	ExpiresAtMicros int64
	Count           int    // messages leased (Queen's batch_size); the span ends at the partition's end when fewer remain
	Retries         uint32 // failed releases already charged to the span (Queen's batch_retry_count)
}

// ImportCursorState sets the cursor (and lease) of c: it replaces what the (partition, group)
// held, so a second import of the same source sets the same state, except that it never moves
// a cursor back: when comb's cursor is past c's (its consumers read on since an earlier
// import), or at it with a live lease where c has none, comb's is kept. A lease already expired
// at now is not kept (the span is simply available again, as on the source). The cursor
// engine's checkpoint is durable before it returns.
//
// Errors: ErrNotFound (no such queue or partition, or LastTransactionID is not in the
// partition: import the messages first), ErrBadRequest (LastID differs from the stored
// message's id), ErrClosed, storage errors.
func (b *Broker) ImportCursorState(c ImportCursor) error {
	if err := b.enterWrite(); err != nil {
		return err
	}
	defer b.leave()
	if c.Group == "" {
		c.Group = QueueModeGroup
	}
	p, err := b.importPartition(c.Queue, c.Partition)
	if err != nil {
		return err
	}
	if err := p.damagedErr(); err != nil {
		return err
	}
	now := b.now().UnixMicro()
	p.mu.Lock()
	var st lease.State
	if c.LastTransactionID != "" {
		got, _, err := b.findStoredOne(p, c.LastTransactionID)
		if err != nil {
			p.mu.Unlock()
			return b.storageErr(p, err)
		}
		if !got.ok {
			p.mu.Unlock()
			return NotFound(fmt.Sprintf("queue %s partition %s: the last consumed message %s is not stored", c.Queue, c.Partition, c.LastTransactionID))
		}
		if c.LastID != ([16]byte{}) && got.id != c.LastID {
			p.mu.Unlock()
			return BadRequest(fmt.Sprintf("queue %s partition %s: message %s has id %s here, %s at the source",
				c.Queue, c.Partition, c.LastTransactionID, uuidString(got.id), uuidString(c.LastID)))
		}
		st.Committed = got.off
	} else {
		st.Committed = p.log.FirstOffset() - 1
	}
	if l := c.Lease; l.ID != ([16]byte{}) && l.ExpiresAtMicros > now && l.Count > 0 {
		end := min(st.Committed+uint64(l.Count), p.visible.Load()-1)
		if end > st.Committed {
			lease.Grant(&st, l.ID, "", end, l.ExpiresAtMicros)
			st.Retries = l.Retries
		}
	}
	k := cursor.Key{Partition: p.id, Group: strings.Clone(c.Group)}
	if cur, ok := b.cur.Get(k); ok && (cur.Committed > st.Committed || cur.Committed == st.Committed && cur.Lease.Live(now) && !st.Lease.Live(now)) {
		// comb's consumers are ahead (they consumed, or hold a lease, since an earlier
		// import): an import never moves a cursor back, so it never redelivers.
		p.mu.Unlock()
		return nil
	}
	b.cur.Set(k, st)
	b.cursorChanged(p, c.Group)
	p.mu.Unlock()
	b.touchGroup(p, c.Group, now)
	if err := b.cur.Wait(); err != nil {
		return b.closedErr(err)
	}
	return nil
}

// ImportSubscription stores group's subscription record on queue (spec 3.8): mode "all",
// "new" or "timestamp" (Queen's subscription_mode; anything else is "all"), the subscribe
// or requested time and when the record was made, in µs. Durable before it returns (the
// cursor engine's checkpoint). Errors: ErrClosed, the checkpoint's.
func (b *Broker) ImportSubscription(queueName, group, mode string, tsMicros, createdAtMicros int64) error {
	if err := b.enterWrite(); err != nil {
		return err
	}
	defer b.leave()
	s := cursor.Subscription{Mode: cursor.SubAll, CreatedAtMicros: createdAtMicros}
	switch mode {
	case "new", "new-only":
		s.Mode, s.TimestampMicros = cursor.SubNew, tsMicros
	case "timestamp":
		s.Mode, s.TimestampMicros = cursor.SubTimestamp, tsMicros
	}
	b.cur.SetSubscription(queueName, group, s)
	if err := b.cur.Wait(); err != nil {
		return b.closedErr(err)
	}
	return nil
}

// CursorOf returns the committed offset of (queue, partition, group) and the transactionId
// of the message at it ("" when nothing is consumed), for `comb import --verify`; ok is
// false when the group has no cursor there.
func (b *Broker) CursorOf(queueName, partitionName, group string) (committed uint64, txid string, ok bool, err error) {
	p, err := b.importPartition(queueName, partitionName)
	if err != nil {
		return 0, "", false, err
	}
	st, ok := b.cur.Get(cursor.Key{Partition: p.id, Group: group})
	if !ok {
		return 0, "", false, nil
	}
	if st.Committed < p.log.FirstOffset() {
		return st.Committed, "", true, nil
	}
	buf := readBufPool.Get().(*segment.ReadBuffer)
	defer func() { buf.Reset(); readBufPool.Put(buf) }()
	p.mu.Lock()
	m, err := readMessageLocked(p, st.Committed, buf)
	txid = strings.Clone(m.TransactionID)
	p.mu.Unlock()
	if err != nil {
		return 0, "", true, err
	}
	return st.Committed, txid, true, nil
}
