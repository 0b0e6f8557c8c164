package broker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// DLQ lists dead-letter entries (spec 8.6): filtered by queue, group,
// partition name and failedAt range, sorted by failedAt descending, paged by
// f.Limit (0 = 100) and f.Offset; total counts every match. It reads the DLQ
// logs whole: an admin route, not a hot path.
func (b *Broker) DLQ(f DLQFilter) ([]DLQEntry, int, error) {
	if err := b.enter(); err != nil {
		return nil, 0, err
	}
	defer b.leave()
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var all []DLQEntry
	for _, q := range b.sortedQueues() {
		if f.Queue != "" && q.name != f.Queue {
			continue
		}
		entries, err := b.readDLQ(q, f)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, entries...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].FailedAtMicros > all[j].FailedAtMicros })
	total := len(all)
	if f.Offset >= len(all) {
		return []DLQEntry{}, total, nil
	}
	all = all[max(f.Offset, 0):]
	if len(all) > f.Limit {
		all = all[:f.Limit]
	}
	return all, total, nil
}

func (b *Broker) readDLQ(q *queue, f DLQFilter) ([]DLQEntry, error) {
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	l, err := b.dlqLogLocked(q, false)
	if err != nil || l == nil {
		return nil, err
	}
	var out []DLQEntry
	buf := new(segment.ReadBuffer)
	for from := l.FirstOffset(); from < l.NextOffset(); {
		msgs, err := l.Read(from, 1024, 8<<20, buf)
		if err != nil {
			return nil, fmt.Errorf("queue %s: dlq read: %w", q.name, err)
		}
		if len(msgs) == 0 {
			break
		}
		for i := range msgs {
			m := &msgs[i]
			meta, err := walentry.DecodeDLQMeta(m.Extra)
			if err != nil {
				b.log.Warn().Str("queue", q.name).Uint64("offset", m.Offset).Msg("dlq: skipping an entry with malformed metadata")
				continue
			}
			if b.msgNotes.store.Deleted(notes.MessageRef{Partition: meta.PartitionID, Offset: meta.Offset}) {
				continue // DELETE /api/v1/messages (the dashboard's DLQ purge) removed it
			}
			pname := ""
			if p := b.lookupPartitionByID(meta.PartitionID); p != nil {
				pname = p.name
			}
			switch {
			case f.Group != "" && meta.Group != f.Group,
				f.Partition != "" && pname != f.Partition,
				f.FromMicros != 0 && meta.FailedAt < f.FromMicros,
				f.ToMicros != 0 && meta.FailedAt > f.ToMicros:
				continue
			}
			payload, payloadErr := b.readPayload(q, m.ID, m.Payload) // spec 9.2, 11 #41: DLQ reads decrypt too
			out = append(out, DLQEntry{
				ID: uuidString(m.ID), TransactionID: meta.TransactionID, PartitionID: uuidString(meta.PartitionID),
				Queue: q.name, Partition: pname, Group: meta.Group, ErrorMessage: meta.Error, RetryCount: meta.RetryCount,
				Payload: append([]byte(nil), payload...), PayloadError: payloadErr, ProducerSub: strings.Clone(m.ProducerSub),
				CreatedAtMicros: meta.CreatedAt, FailedAtMicros: meta.FailedAt,
			})
		}
		from = msgs[len(msgs)-1].Offset + 1
		buf.Reset()
	}
	return out, nil
}
