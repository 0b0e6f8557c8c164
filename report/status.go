package report

import (
	"sort"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// Reads behind the dashboard's status routes (spec 8.7) that the resources
// reports (resources.go) do not already answer: a queue's options and
// per-partition cursor, the newest messages of a queue, and the lease and DLQ
// summary of the overview. All are computed when asked, from memory except
// the message reads, whose cost is bounded by the request's limit.

// StatusQueueDetail is GET /api/v1/status/queues/:queue: the resources detail
// with the queue's options and, per partition (same order as PartitionList),
// how many messages the __QUEUE_MODE__ cursor has consumed.
type StatusQueueDetail struct {
	ResourceQueueDetail
	Options  broker.QueueOptions
	Consumed []int64 // per partition: committed offset - first offset + 1 of the queue-mode cursor (0 without one)
}

// StatusQueue answers one queue's status detail with the partitions of page;
// ok false for an unknown queue.
func (rs *Reports) StatusQueue(name string, page PartitionPage) (StatusQueueDetail, bool) {
	d, ok := rs.ResourceQueue(name, page)
	if !ok {
		return StatusQueueDetail{}, false
	}
	q, ok := rs.v.Queue(name)
	if !ok {
		return StatusQueueDetail{}, false
	}
	out := StatusQueueDetail{ResourceQueueDetail: d, Options: q.Conf().Options, Consumed: make([]int64, len(d.PartitionList))}
	for i, rp := range d.PartitionList {
		p, ok := q.Partition(rp.Name)
		if !ok {
			continue
		}
		if st, ok := rs.v.Cursor(p.ID(), broker.QueueModeGroup); ok && st.Committed+1 > p.LiveFrom() {
			out.Consumed[i] = int64(st.Committed + 1 - p.LiveFrom())
		}
	}
	return out, true
}

// maxRecentBytes caps the payload bytes of one partition's read of recent
// messages (the pop path's cap per read).
const maxRecentBytes = 32 << 20

// RecentMessage is one row of GET /api/v1/status/queues/:queue/messages.
type RecentMessage struct {
	ID, TransactionID, PartitionID, Partition string
	Status                                    string // pending, processing or completed, for __QUEUE_MODE__
	CreatedAtMicros                           int64
}

// RecentMessages returns a queue's newest messages, newest first, paged by
// limit (default 50, at most 1000) and offset: at most limit+offset messages
// are read from each partition's tail. ok false for an unknown queue.
func (rs *Reports) RecentMessages(name string, limit, offset int) ([]RecentMessage, bool) {
	if err := rs.v.Enter(); err != nil {
		return nil, false
	}
	defer rs.v.Leave()
	q, ok := rs.v.Queue(name)
	if !ok {
		return nil, false
	}
	if limit <= 0 {
		limit = 50
	}
	limit, offset = min(limit, 1000), min(max(offset, 0), 10000)
	want := limit + offset
	now := rs.v.Now().UnixMicro()
	var all []RecentMessage
	buf := new(segment.ReadBuffer)
	for _, p := range q.Partitions() {
		if p.Damaged() {
			continue
		}
		first, vis := p.LiveFrom(), p.Visible()
		if vis <= first {
			continue
		}
		from := first
		if vis-first > uint64(want) {
			from = vis - uint64(want)
		}
		st, hasCursor := rs.v.Cursor(p.ID(), broker.QueueModeGroup)
		buf.Reset()
		msgs, err := p.Read(from, int(vis-from), maxRecentBytes, buf)
		if err != nil {
			rs.v.Logger().Warn().Err(err).Str("queue", q.Name()).Str("partition", p.Name()).Msg("status: reading recent messages")
			continue
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Offset >= vis {
				break
			}
			all = append(all, RecentMessage{ID: uuidString(m.ID), TransactionID: m.TransactionID, PartitionID: p.IDString(),
				Partition: p.Name(), Status: messageStatus(st, hasCursor, m.Offset, now), CreatedAtMicros: m.TimestampMicros})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAtMicros > all[j].CreatedAtMicros })
	if offset >= len(all) {
		return []RecentMessage{}, true
	}
	all = all[offset:]
	return all[:min(limit, len(all))], true
}

// messageStatus is a message's state for the queue-mode group.
func messageStatus(st lease.State, ok bool, off uint64, nowMicros int64) string {
	switch {
	case !ok:
		return "pending"
	case off <= st.Committed:
		return "completed"
	case st.Lease.Live(nowMicros) && off >= st.Lease.Start && off <= st.Lease.End:
		return "processing"
	}
	return "pending"
}

// StatusSummary is the lease and DLQ part of GET /api/v1/status.
type StatusSummary struct {
	ActiveLeases         int   // (partition, group) pairs under a live lease
	PartitionsWithLeases int   // partitions with at least one
	LeasedMessages       int64 // messages those leases cover
	DLQMessages          int64 // retained DLQ entries, all queues
	DLQPartitions        int   // partitions with at least one
}

// StatusSummary walks every cursor once and counts each queue's DLQ by
// partition (dlqcount.go: only entries appended since the last ask
// are read).
func (rs *Reports) StatusSummary() StatusSummary {
	var s StatusSummary
	if err := rs.v.Enter(); err != nil {
		return s
	}
	defer rs.v.Leave()
	now := rs.v.Now().UnixMicro()
	leased := make(map[[16]byte]bool)
	rs.v.RangeCursors(func(k cursor.Key, st lease.State) bool {
		if st.Lease.Live(now) {
			s.ActiveLeases++
			leased[k.Partition] = true
			if st.Lease.End >= st.Lease.Start {
				s.LeasedMessages += int64(st.Lease.End - st.Lease.Start + 1)
			}
		}
		return true
	})
	s.PartitionsWithLeases = len(leased)
	for _, q := range rs.v.Queues() {
		for _, n := range rs.dlqCountsByPartition(q) {
			if n > 0 {
				s.DLQMessages += n
				s.DLQPartitions++
			}
		}
	}
	return s
}

// CheckpointLatency is the cumulative histogram of cursor checkpoints, from
// their commit-log append to durable (Prometheus comb_checkpoint_latency_seconds).
func (rs *Reports) CheckpointLatency() broker.LatencyHistogram { return rs.v.CheckpointLatency() }

// DLQDepths calls fn with each queue's retained DLQ entries, by queue name
// (Prometheus queen_dlq_depth_by_queue; queues with none included).
func (rs *Reports) DLQDepths(fn func(queue string, n int64)) {
	if err := rs.v.Enter(); err != nil {
		return
	}
	defer rs.v.Leave()
	for _, q := range rs.v.Queues() {
		fn(q.Name(), rs.dlqCount(q))
	}
}

// SegmentBytes sums the segment bytes of every partition and DLQ log that has
// listed its files (segment.Log.Bytes); unlisted counts the logs opened from a
// summary and not read since start, whose bytes are not included.
func (rs *Reports) SegmentBytes() (bytes int64, unlisted int) {
	add := func(n int64, ok bool) {
		bytes += n
		if !ok {
			unlisted++
		}
	}
	for _, q := range rs.v.Queues() {
		for _, p := range q.Partitions() {
			add(p.Bytes())
		}
		if n, listed, open := q.DLQBytes(); open {
			add(n, listed)
		}
	}
	return bytes, unlisted
}
