package report

import (
	"sort"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// GroupSummary is one (group, queue) row of GET /api/v1/consumer-groups (spec 7.6).
type GroupSummary struct {
	Name                  string
	Queue                 string
	Members               int // partitions with a cursor
	PartitionsWithLag     int
	TotalLag              int64
	MaxTimeLagSeconds     int64
	State                 string // Stable, Lagging, Dead
	SubscriptionMode      string // "" means null
	SubscriptionMicros    int64  // 0 means null
	SubscriptionCreatedAt int64  // µs; 0 means null
}

// ConsumerGroups summarises every (group, queue) with a cursor or a
// subscription record (spec 7.6), sorted by group then queue. Lag is counted
// in messages after the cursor; time lag is the age of the oldest unconsumed
// message. It walks every cursor: an admin route.
func (rs *Reports) ConsumerGroups() []GroupSummary {
	if err := rs.v.Enter(); err != nil {
		return nil
	}
	defer rs.v.Leave()
	type gq struct{ group, queue string }
	rows := make(map[gq]*GroupSummary)
	consumed := make(map[gq]bool)
	row := func(k gq) *GroupSummary {
		r := rows[k]
		if r == nil {
			r = &GroupSummary{Name: k.group, Queue: k.queue}
			rows[k] = r
		}
		return r
	}
	now := rs.v.Now().UnixMicro()
	buf := new(segment.ReadBuffer)
	rs.v.RangeCursors(func(k cursor.Key, st lease.State) bool {
		p, ok := rs.v.Partition(k.Partition)
		if !ok {
			return true
		}
		key := gq{k.Group, rs.v.QueueOf(p).Name()}
		r := row(key)
		r.Members++
		if st.Committed > 0 {
			consumed[key] = true
		}
		vis := p.Visible()
		from := max(st.Committed+1, p.LiveFrom())
		if vis > from {
			r.PartitionsWithLag++
			r.TotalLag += int64(vis - from)
			buf.Reset()
			if p.Damaged() {
				return true
			}
			if msgs, err := p.Read(from, 1, 1<<20, buf); err == nil && len(msgs) > 0 {
				if lag := (now - msgs[0].TimestampMicros) / 1_000_000; lag > r.MaxTimeLagSeconds {
					r.MaxTimeLagSeconds = lag
				}
			}
		}
		return true
	})
	rs.v.RangeSubscriptions(func(queue, group string, s cursor.Subscription) bool {
		r := row(gq{group, queue})
		r.SubscriptionMode = subModeName(s.Mode)
		r.SubscriptionMicros = s.TimestampMicros
		r.SubscriptionCreatedAt = s.CreatedAtMicros
		return true
	})
	out := make([]GroupSummary, 0, len(rows))
	for k, r := range rows {
		switch {
		case !consumed[k]:
			r.State = "Dead"
		case r.MaxTimeLagSeconds > 300:
			r.State = "Lagging"
		default:
			r.State = "Stable"
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Queue < out[j].Queue
	})
	return out
}

func subModeName(m cursor.SubMode) string {
	switch m {
	case cursor.SubNew:
		return "new"
	case cursor.SubTimestamp:
		return "timestamp"
	default:
		return "all"
	}
}
