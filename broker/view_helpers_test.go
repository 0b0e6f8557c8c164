package broker

import (
	"sort"
	"strings"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// The engine's tests read what they wrote through the View, as package report
// does, without the report package (it imports broker). These helpers give
// only what those tests assert; the reports' own rules (filters, pages,
// statuses) are tested in package report.

// dlqFilter picks the dead letters listDLQ returns ("" = any).
type dlqFilter struct {
	Queue, Group string
	Limit        int // 0 = 100
}

// dlqEntry is one dead-lettered message as the engine wrote it.
type dlqEntry struct {
	ID, TransactionID, PartitionID string
	Queue, Partition, Group        string
	ErrorMessage                   string
	RetryCount                     int64
	Payload                        []byte
	PayloadError                   string
	ProducerSub                    string
	CreatedAtMicros                int64
	FailedAtMicros                 int64
}

// listDLQ reads every queue's DLQ log through the View: the entries f picks,
// newest failure first, at most f.Limit, and how many it picked in all.
func listDLQ(b *Broker, f dlqFilter) ([]dlqEntry, int, error) {
	v := b.View()
	var all []dlqEntry
	for _, q := range v.Queues() {
		if f.Queue != "" && q.Name() != f.Queue {
			continue
		}
		var readErr error
		err := q.WithDLQ(func(l DLQLog) {
			buf := new(segment.ReadBuffer)
			for from := l.FirstOffset(); from < l.NextOffset(); {
				msgs, err := l.Read(from, 1024, 8<<20, buf)
				if err != nil || len(msgs) == 0 {
					readErr = err
					return
				}
				for i := range msgs {
					m := &msgs[i]
					meta, err := walentry.DecodeDLQMeta(m.Extra)
					if err != nil || v.Deleted(notes.MessageRef{Partition: meta.PartitionID, Offset: meta.Offset}) {
						continue
					}
					if f.Group != "" && meta.Group != f.Group {
						continue
					}
					pname := ""
					if p, ok := v.Partition(meta.PartitionID); ok {
						pname = p.Name()
					}
					payload, payloadErr := q.OpenPayload(m.ID, m.Payload)
					all = append(all, dlqEntry{ID: uuidString(m.ID), TransactionID: meta.TransactionID,
						PartitionID: uuidString(meta.PartitionID), Queue: q.Name(), Partition: pname, Group: meta.Group,
						ErrorMessage: meta.Error, RetryCount: meta.RetryCount, Payload: append([]byte(nil), payload...),
						PayloadError: payloadErr, ProducerSub: strings.Clone(m.ProducerSub),
						CreatedAtMicros: meta.CreatedAt, FailedAtMicros: meta.FailedAt})
				}
				from = msgs[len(msgs)-1].Offset + 1
				buf.Reset()
			}
		})
		if err == nil {
			err = readErr
		}
		if err != nil {
			return nil, 0, err
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].FailedAtMicros > all[j].FailedAtMicros })
	total := len(all)
	if f.Limit <= 0 {
		f.Limit = 100
	}
	return all[:min(len(all), f.Limit)], total, nil
}

// foundMsg is a message found by (partition id, transaction id).
type foundMsg struct {
	Payload []byte // as stored
	offset  uint64
}

// findMsg looks a message up as GET /api/v1/messages/:partitionId/:transactionId does.
func findMsg(b *Broker, partitionID, txid string) (foundMsg, error) {
	_, m, err := b.View().FindMessage(partitionID, txid)
	return foundMsg{Payload: m.Payload, offset: m.Offset}, err
}

// listedTxids are the transaction ids of queue's retained, visible,
// undeleted messages (expired ones are not retained), newest first: what the
// message list shows of them.
func listedTxids(b *Broker, queue string) ([]string, error) {
	v := b.View()
	q, ok := v.Queue(queue)
	if !ok {
		return nil, nil
	}
	type row struct {
		tx     string
		ts     int64
		pid    string
		offset uint64
	}
	var rows []row
	buf := new(segment.ReadBuffer)
	for _, p := range q.Partitions() {
		for from := p.LiveFrom(); from < p.Visible(); {
			msgs, err := p.Read(from, 1024, 0, buf)
			if err != nil {
				return nil, err
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				if m.Offset < p.Visible() && !v.Deleted(notes.MessageRef{Partition: p.ID(), Offset: m.Offset}) {
					rows = append(rows, row{strings.Clone(m.TransactionID), m.TimestampMicros, p.IDString(), m.Offset})
				}
			}
			from = msgs[len(msgs)-1].Offset + 1
			buf.Reset()
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, c := rows[i], rows[j]
		if a.ts != c.ts {
			return a.ts > c.ts
		}
		if a.pid != c.pid {
			return a.pid > c.pid
		}
		return a.offset > c.offset
	})
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.tx
	}
	return out, nil
}
