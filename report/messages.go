package report

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/segment"
)

// Bounds of one message list request (docs/api.md, "Messages").
const (
	// maxListPartitions caps the partitions one list request reads.
	maxListPartitions = 1000
	// listScanSlack is added to 4 × (limit+offset) to give the records one
	// partition may read when a status filter or deletions skip some.
	listScanSlack = 1024
	// listChunk caps the records of one backward read: with no byte budget
	// on it, this bounds the payload bytes one read holds.
	listChunk = 1024
)

// MessageFilter selects messages for GET /api/v1/messages (spec 8.5). The
// HTTP layer applies the window defaults; Limit 0 means 200.
type MessageFilter struct {
	Queue, Partition, Namespace, Task string
	Status                            string // "" = any; else pending, processing, completed or dead_letter
	FromMicros, ToMicros              int64  // inclusive window on createdAt; 0 = now - 1 h / the end of the current minute
	Limit, Offset                     int
}

// MessageRow is one message of the list (spec 8.5), without its payload.
type MessageRow struct {
	ID, TransactionID, PartitionID string
	Queue, Partition               string
	Namespace, Task                string // "" = null
	Status                         string
	QueueStatus                    string // relative to __QUEUE_MODE__; "" = null (it does not read the queue)
	ConsumedBy, TotalGroups        int    // named groups done with it / reading the queue
	TraceID, ProducerSub           string // "" = null
	Priority                       int64
	CreatedAtMicros                int64
	LeaseExpiresAtMicros           int64 // 0 = null
	offset                         uint64
}

// MessageList is the answer of the list: the page, newest first, and the
// mode of the queues it looked at.
type MessageList struct {
	Messages []MessageRow
	Mode     MessageMode
}

// Messages lists messages newest first (spec 8.5) from the segment logs' own
// indexes: the time index gives each partition's offsets inside the window,
// cursors, leases and the DLQ index give each message's status, and only the
// newest limit+offset matches of a partition are read, in chunks from the
// window's end backwards. Partitions are visited newest (last segment
// timestamp) first and the walk stops once no later partition can place a
// message on the page, or after maxListPartitions. Per partition at most
// 4 × (limit+offset) + 1024 records are read (the matches when no filter or
// deletion skips any), so a request never scans a whole partition.
func (rs *Reports) Messages(f MessageFilter) (MessageList, error) {
	if err := rs.v.Enter(); err != nil {
		return MessageList{}, err
	}
	defer rs.v.Leave()
	if f.Limit <= 0 {
		f.Limit = 200
	}
	f.Offset = max(f.Offset, 0)
	need := f.Limit + f.Offset
	clock := rs.v.Now()
	now := clock.UnixMicro()
	if f.ToMicros == 0 { // spec 8.5: now, inclusive to the end of that minute
		f.ToMicros = clock.Truncate(time.Minute).Add(time.Minute).UnixMicro() - 1
	}
	if f.FromMicros == 0 { // spec 8.5: now - 1 h
		f.FromMicros = clock.Add(-time.Hour).UnixMicro()
	}
	parts, mode := rs.listPartitions(f)
	var rows []MessageRow
	buf := readBufPool.Get().(*segment.ReadBuffer)
	defer func() { buf.Reset(); readBufPool.Put(buf) }()
	for i, p := range parts {
		if i == maxListPartitions {
			break
		}
		if len(rows) >= need {
			sortRows(rows)
			rows = rows[:need]
			if min(p.LastTimestamp(), f.ToMicros) < rows[need-1].CreatedAtMicros {
				break // every later partition is older than the whole page
			}
		}
		got, err := rs.listPartition(p, f, need, now, buf)
		if err != nil {
			return MessageList{}, err
		}
		rows = append(rows, got...)
	}
	sortRows(rows)
	if f.Offset >= len(rows) {
		return MessageList{Messages: []MessageRow{}, Mode: mode}, nil
	}
	rows = rows[f.Offset:min(len(rows), need)]
	return MessageList{Messages: rows, Mode: mode}, nil
}

// listPartitions returns the partitions the filter selects that have a
// segment inside the window, newest last segment first, and the mode of
// their queues.
func (rs *Reports) listPartitions(f MessageFilter) ([]broker.PartitionView, MessageMode) {
	var out []broker.PartitionView
	var mode MessageMode
	bus := map[string]struct{}{}
	for _, q := range rs.v.Queues() {
		c := q.Conf()
		if (f.Queue != "" && q.Name() != f.Queue) || (f.Namespace != "" && c.Namespace != f.Namespace) || (f.Task != "" && c.Task != f.Task) {
			continue
		}
		for g := range q.Groups() {
			if g == broker.QueueModeGroup {
				mode.HasQueueMode = true
			} else {
				bus[q.Name()+"\x00"+g] = struct{}{}
			}
		}
		for _, p := range q.Partitions() {
			if f.Partition != "" && p.Name() != f.Partition {
				continue
			}
			if p.Visible() <= 1 || p.LastTimestamp() < f.FromMicros || p.Damaged() {
				continue
			}
			out = append(out, p)
		}
	}
	mode.BusGroupsCount = len(bus)
	mode.Type = modeType(mode.HasQueueMode, mode.BusGroupsCount)
	ts := make(map[broker.PartitionView]int64, len(out))
	for _, p := range out {
		ts[p] = p.LastTimestamp()
	}
	sort.SliceStable(out, func(i, j int) bool { return ts[out[i]] > ts[out[j]] })
	return out, mode
}

// listPartition returns up to need matching rows of p, newest first.
func (rs *Reports) listPartition(p broker.PartitionView, f MessageFilter, need int, now int64, buf *segment.ReadBuffer) ([]MessageRow, error) {
	lo := max(p.OffsetAtOrAfterTime(f.FromMicros), p.LiveFrom()) // expired messages are gone (read_expire.go)
	hi := min(p.LastOffsetAtOrBefore(f.ToMicros), p.Visible()-1)
	if lo > hi || hi == 0 {
		return nil, nil
	}
	v := rs.viewMessages(p, now)
	err := rs.withDLQHits(rs.v.QueueOf(p), p.ID(), func(h map[uint64][]dlqHit) {
		for off, hits := range h {
			if off >= lo && off <= hi {
				if v.dlq == nil {
					v.dlq = make(map[uint64][]dlqHit)
				}
				v.dlq[off] = hits
			}
		}
	})
	if err != nil {
		return nil, err
	}
	lo, hi, ok := v.span(f.Status, lo, hi)
	if !ok {
		return nil, nil
	}
	var rows []MessageRow
	budget := 4*need + listScanSlack
	conf := rs.v.QueueOf(p).Conf()
	for end := hi; end >= lo && len(rows) < need && budget > 0; {
		n := min(end-lo+1, uint64(min(need-len(rows)+16, budget, listChunk)))
		start := end - n + 1
		msgs, err := p.Read(start, int(n), 0, buf)
		if err != nil {
			return nil, err
		}
		budget -= int(n)
		for i := len(msgs) - 1; i >= 0 && len(rows) < need; i-- {
			m := &msgs[i]
			if m.Offset > end || m.Offset < start {
				continue
			}
			ref := notes.MessageRef{Partition: p.ID(), Offset: m.Offset}
			if rs.v.Deleted(ref) {
				continue
			}
			st := v.status(ref)
			if f.Status != "" && st != f.Status {
				continue
			}
			rows = append(rows, v.row(p, conf, m, st))
		}
		if start <= lo || start == 0 {
			break
		}
		end = start - 1
	}
	return rows, nil
}

// row builds one list row; its strings are copied out of the read buffer.
func (v *msgView) row(p broker.PartitionView, c broker.QueueConf, m *segment.Message, status string) MessageRow {
	r := MessageRow{ID: uuidString(m.ID), TransactionID: strings.Clone(m.TransactionID), PartitionID: p.IDString(),
		Queue: v.queue, Partition: p.Name(), Namespace: c.Namespace, Task: c.Task, Status: status,
		TotalGroups: len(v.named), TraceID: strings.Clone(m.TraceID), ProducerSub: strings.Clone(m.ProducerSub),
		Priority: c.Options.Priority, CreatedAtMicros: m.TimestampMicros, LeaseExpiresAtMicros: v.leaseExpiry(m.Offset), offset: m.Offset}
	ref := notes.MessageRef{Partition: p.ID(), Offset: m.Offset}
	if v.qm != nil {
		r.QueueStatus = v.groupStatus(v.qm, ref)
	}
	r.ConsumedBy = v.consumedBy(m.Offset)
	return r
}

// sortRows orders rows newest first: createdAt, then partition, then offset.
func sortRows(rows []MessageRow) {
	sort.Slice(rows, func(i, j int) bool {
		a, c := &rows[i], &rows[j]
		if a.CreatedAtMicros != c.CreatedAtMicros {
			return a.CreatedAtMicros > c.CreatedAtMicros
		}
		if a.PartitionID != c.PartitionID {
			return a.PartitionID > c.PartitionID
		}
		return a.offset > c.offset
	})
}

// readBufPool recycles the read buffers of the message list (its reads hold
// up to listChunk records).
var readBufPool = sync.Pool{New: func() any { return new(segment.ReadBuffer) }}
