package broker

import (
	"fmt"
	"strings"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// errMessageNotFound is the answer for an unknown (partitionId,
// transactionId) on the message and trace routes (spec 8.5, 9.3).
var errMessageNotFound = NotFound("Message not found")

// foundMessage is a message looked up by (partitionId, transactionId); its
// strings and slices are its own.
type foundMessage struct {
	p   *partition
	msg segment.Message
}

// findMessage finds the visible, retained, undeleted message txid of
// partition pidStr through the partition's dedup index (the lookup the push
// path uses): one hash lookup and one record read, never a scan. Unknown →
// errMessageNotFound.
func (b *Broker) findMessage(pidStr, txid string) (foundMessage, error) {
	id, ok := parseID(pidStr)
	if !ok || txid == "" {
		return foundMessage{}, errMessageNotFound
	}
	p := b.lookupPartitionByID(id)
	if p == nil || p.q.deleted.Load() {
		return foundMessage{}, errMessageNotFound
	}
	if err := p.damagedErr(); err != nil {
		return foundMessage{}, err
	}
	off, _, ok, err := p.log.FindTransaction(txid)
	if err != nil {
		return foundMessage{}, fmt.Errorf("queue %s partition %s: find transaction: %w", p.q.name, p.name, err)
	}
	if !ok || off >= p.visible.Load() || off < p.log.FirstOffset() ||
		b.msgNotes.store.Deleted(notes.MessageRef{Partition: p.id, Offset: off}) {
		return foundMessage{}, errMessageNotFound
	}
	buf := readBufPool.Get().(*segment.ReadBuffer)
	defer func() { buf.Reset(); readBufPool.Put(buf) }()
	msgs, err := p.log.Read(off, 1, 0, buf)
	if err != nil {
		return foundMessage{}, fmt.Errorf("queue %s partition %s: read offset %d: %w", p.q.name, p.name, off, err)
	}
	if len(msgs) == 0 || msgs[0].Offset != off {
		return foundMessage{}, errMessageNotFound
	}
	m := msgs[0]
	m.Payload = append([]byte(nil), m.Payload...)
	m.Extra = nil
	m.TransactionID, m.TraceID, m.ProducerSub = strings.Clone(m.TransactionID), strings.Clone(m.TraceID), strings.Clone(m.ProducerSub)
	return foundMessage{p: p, msg: m}, nil
}

// DeleteMessage deletes one message (spec 8.5, DELETE
// /api/v1/messages/:partitionId/:transactionId): no group is given it again
// (read_deleted.go) and the message routes no longer show it. It appends a
// tombstone (a Note entry of the commit log, then the notes store) and
// returns once it is durable: the segment logs stay append-only. found is false for an unknown or already deleted
// message (200 with success:false).
func (b *Broker) DeleteMessage(partitionID, txid string) (found bool, err error) {
	if err := b.enterWrite(); err != nil {
		return false, err
	}
	defer b.leave()
	fm, err := b.findMessage(partitionID, txid)
	if err == errMessageNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	added, err := b.logNote(notes.EncodeTombstone(notes.MessageRef{Partition: fm.p.id, Offset: fm.msg.Offset}))
	if err != nil {
		return false, fmt.Errorf("delete message: %w", err)
	}
	return added, nil
}
