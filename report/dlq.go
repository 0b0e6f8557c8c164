package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/walentry"

	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// DLQFilter selects dead-letter entries (spec 8.6). Zero values mean no filter;
// Limit 0 means 100.
type DLQFilter struct {
	Queue, Group, Partition string
	FromMicros, ToMicros    int64
	Limit, Offset           int
}

// DLQEntry is one dead-lettered message (spec 4.5, 8.6).
type DLQEntry struct {
	ID              string
	TransactionID   string
	PartitionID     string
	Queue           string
	Partition       string
	Group           string
	ErrorMessage    string
	RetryCount      int64
	Payload         []byte
	PayloadError    string // as Message.PayloadError
	ProducerSub     string
	CreatedAtMicros int64
	FailedAtMicros  int64
}

// DLQ lists dead-letter entries (spec 8.6): filtered by queue, group,
// partition name and failedAt range, sorted by failedAt descending, paged by
// f.Limit (0 = 100) and f.Offset; total counts every match. It reads the DLQ
// logs whole: an admin route, not a hot path.
func (rs *Reports) DLQ(f DLQFilter) ([]DLQEntry, int, error) {
	if err := rs.v.Enter(); err != nil {
		return nil, 0, err
	}
	defer rs.v.Leave()
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var all []DLQEntry
	for _, q := range rs.v.Queues() {
		if f.Queue != "" && q.Name() != f.Queue {
			continue
		}
		entries, err := rs.readDLQ(q, f)
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

// readDLQ reads the entries of q's DLQ that f selects (none when it never
// dead-lettered).
func (rs *Reports) readDLQ(q broker.QueueView, f DLQFilter) ([]DLQEntry, error) {
	var out []DLQEntry
	var readErr error
	err := q.WithDLQ(func(l broker.DLQLog) { out, readErr = rs.readDLQLog(q, l, f) })
	if err == nil {
		err = readErr
	}
	return out, err
}

// readDLQLog reads the entries of q's DLQ log l that f selects.
func (rs *Reports) readDLQLog(q broker.QueueView, l broker.DLQLog, f DLQFilter) ([]DLQEntry, error) {
	var out []DLQEntry
	buf := new(segment.ReadBuffer)
	for from := l.FirstOffset(); from < l.NextOffset(); {
		msgs, err := l.Read(from, 1024, 8<<20, buf)
		if err != nil {
			return nil, fmt.Errorf("queue %s: dlq read: %w", q.Name(), err)
		}
		if len(msgs) == 0 {
			break
		}
		for i := range msgs {
			m := &msgs[i]
			meta, err := walentry.DecodeDLQMeta(m.Extra)
			if err != nil {
				rs.v.Logger().Warn().Str("queue", q.Name()).Uint64("offset", m.Offset).Msg("dlq: skipping an entry with malformed metadata")
				continue
			}
			if rs.v.Deleted(notes.MessageRef{Partition: meta.PartitionID, Offset: meta.Offset}) {
				continue // DELETE /api/v1/messages (the dashboard's DLQ purge) removed it
			}
			pname := ""
			if p, ok := rs.v.Partition(meta.PartitionID); ok {
				pname = p.Name()
			}
			switch {
			case f.Group != "" && meta.Group != f.Group,
				f.Partition != "" && pname != f.Partition,
				f.FromMicros != 0 && meta.FailedAt < f.FromMicros,
				f.ToMicros != 0 && meta.FailedAt > f.ToMicros:
				continue
			}
			payload, payloadErr := q.OpenPayload(m.ID, m.Payload) // spec 9.2, 11 #41: DLQ reads decrypt too
			out = append(out, DLQEntry{
				ID: uuidString(m.ID), TransactionID: meta.TransactionID, PartitionID: uuidString(meta.PartitionID),
				Queue: q.Name(), Partition: pname, Group: meta.Group, ErrorMessage: meta.Error, RetryCount: meta.RetryCount,
				Payload: append([]byte(nil), payload...), PayloadError: payloadErr, ProducerSub: strings.Clone(m.ProducerSub),
				CreatedAtMicros: meta.CreatedAt, FailedAtMicros: meta.FailedAt,
			})
		}
		from = msgs[len(msgs)-1].Offset + 1
		buf.Reset()
	}
	return out, nil
}
