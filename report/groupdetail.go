package report

import (
	"sort"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// GroupPartition is one partition of GET /api/v1/consumer-groups/:group
// (spec 7.6). comb keeps no ack times, so LastConsumedAtMicros is the
// createdAt (µs) of the message the cursor stands on: when what the group has
// finished was produced; 0 (null) when nothing is committed or it is gone.
type GroupPartition struct {
	Queue, Partition, PartitionID string
	WorkerID                      string // of the live lease; "" (null) when none
	LastConsumedAtMicros          int64
	TotalConsumed                 int64 // the cursor: offsets start at 1, so every message at or before it (consumed, or skipped by a subscription or seek)
	OffsetLag                     int64 // visible messages after the cursor
	TimeLagSeconds                int64 // age of the oldest of them; 0 when none
	OldestUnconsumedAtMicros      int64 // its createdAt; 0 when none
	LeaseActive                   bool
}

// GroupDetail returns every partition where group has a cursor (spec 7.6,
// GET /api/v1/consumer-groups/:group), sorted by queue then partition name;
// empty for an unknown group. It reads at most two messages per partition.
func (rs *Reports) GroupDetail(group string) []GroupPartition {
	if err := rs.v.Enter(); err != nil {
		return nil
	}
	defer rs.v.Leave()
	if group == "" {
		group = broker.QueueModeGroup
	}
	var out []GroupPartition
	now := rs.v.Now().UnixMicro()
	buf := new(segment.ReadBuffer)
	rs.v.RangeCursors(func(k cursor.Key, st lease.State) bool {
		if k.Group != group {
			return true
		}
		if p, ok := rs.v.Partition(k.Partition); ok {
			out = append(out, rs.groupPartition(p, st, now, buf))
		}
		return true
	})
	sortGroupPartitions(out)
	return out
}

// LaggingPartition is one row of GET /api/v1/consumer-groups/lagging (spec 7.6).
type LaggingPartition struct {
	Group string
	GroupPartition
}

// LaggingPartitions returns every (group, partition) whose oldest unconsumed
// message is more than minLagSeconds old (spec 7.6), by time lag descending
// (then group, queue, partition). It walks every cursor: an admin route.
func (rs *Reports) LaggingPartitions(minLagSeconds int64) []LaggingPartition {
	if err := rs.v.Enter(); err != nil {
		return nil
	}
	defer rs.v.Leave()
	var out []LaggingPartition
	now := rs.v.Now().UnixMicro()
	buf := new(segment.ReadBuffer)
	rs.v.RangeCursors(func(k cursor.Key, st lease.State) bool {
		p, ok := rs.v.Partition(k.Partition)
		if !ok || p.Visible() <= st.Committed+1 {
			return true // nothing pending: no lag, no read
		}
		if gp := rs.groupPartition(p, st, now, buf); gp.OffsetLag > 0 && gp.TimeLagSeconds > minLagSeconds {
			out = append(out, LaggingPartition{Group: k.Group, GroupPartition: gp})
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, c := &out[i], &out[j]
		if a.TimeLagSeconds != c.TimeLagSeconds {
			return a.TimeLagSeconds > c.TimeLagSeconds
		}
		if a.Group != c.Group {
			return a.Group < c.Group
		}
		if a.Queue != c.Queue {
			return a.Queue < c.Queue
		}
		return a.Partition < c.Partition
	})
	return out
}

// groupPartition fills one row from a cursor. Damaged partitions report what
// memory knows and read nothing.
func (rs *Reports) groupPartition(p broker.PartitionView, st lease.State, now int64, buf *segment.ReadBuffer) GroupPartition {
	gp := GroupPartition{Queue: rs.v.QueueOf(p).Name(), Partition: p.Name(), PartitionID: p.IDString(),
		TotalConsumed: int64(st.Committed), LeaseActive: st.Lease.Live(now)}
	if gp.LeaseActive {
		gp.WorkerID = st.Lease.WorkerID
	}
	vis := p.Visible()
	from := max(st.Committed+1, p.LiveFrom())
	if vis > from {
		gp.OffsetLag = int64(vis - from)
	}
	if p.Damaged() {
		return gp
	}
	if st.Committed > 0 {
		buf.Reset()
		if msgs, err := p.Read(st.Committed, 1, 1<<20, buf); err == nil && len(msgs) > 0 && msgs[0].Offset == st.Committed {
			gp.LastConsumedAtMicros = msgs[0].TimestampMicros
		}
	}
	if gp.OffsetLag > 0 {
		buf.Reset()
		if msgs, err := p.Read(from, 1, 1<<20, buf); err == nil && len(msgs) > 0 {
			gp.OldestUnconsumedAtMicros = msgs[0].TimestampMicros
			gp.TimeLagSeconds = max((now-msgs[0].TimestampMicros)/1_000_000, 0)
		}
	}
	return gp
}

func sortGroupPartitions(rows []GroupPartition) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Queue != rows[j].Queue {
			return rows[i].Queue < rows[j].Queue
		}
		return rows[i].Partition < rows[j].Partition
	})
}
