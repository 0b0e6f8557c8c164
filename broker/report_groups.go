package broker

import (
	"sort"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// ConsumerGroups summarises every (group, queue) with a cursor or a
// subscription record (spec 7.6), sorted by group then queue. Lag is counted
// in messages after the cursor; time lag is the age of the oldest unconsumed
// message. It walks every cursor: an admin route.
func (b *Broker) ConsumerGroups() []GroupSummary {
	if err := b.enter(); err != nil {
		return nil
	}
	defer b.leave()
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
	now := b.now().UnixMicro()
	buf := new(segment.ReadBuffer)
	b.cur.Range(func(k cursor.Key, st lease.State) bool {
		p := b.lookupPartitionByID(k.Partition)
		if p == nil {
			return true
		}
		key := gq{k.Group, p.q.name}
		r := row(key)
		r.Members++
		if st.Committed > 0 {
			consumed[key] = true
		}
		vis := p.visible.Load()
		from := max(st.Committed+1, p.liveFrom())
		if vis > from {
			r.PartitionsWithLag++
			r.TotalLag += int64(vis - from)
			buf.Reset()
			if p.isDamaged() {
				return true
			}
			if msgs, err := p.log.Read(from, 1, 1<<20, buf); err == nil && len(msgs) > 0 {
				if lag := (now - msgs[0].TimestampMicros) / 1_000_000; lag > r.MaxTimeLagSeconds {
					r.MaxTimeLagSeconds = lag
				}
			}
		}
		return true
	})
	b.cur.RangeSubscriptions(func(queue, group string, s cursor.Subscription) bool {
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
