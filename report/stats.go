package report

import (
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/lease"
)

// Stats returns the counters and gauges behind /metrics (spec 8.2, 8.3): the
// engine's counters (broker.View.Counters) and TotalLag, the visible messages
// after every cursor, which walks every cursor (not after Close).
func (rs *Reports) Stats() broker.Stats {
	s := rs.v.Counters()
	if rs.v.Closed() {
		return s
	}
	rs.v.RangeCursors(func(k cursor.Key, st lease.State) bool {
		if p, ok := rs.v.Partition(k.Partition); ok {
			if vis := p.Visible(); vis > st.Committed+1 {
				s.TotalLag += int64(vis - st.Committed - 1)
			}
		}
		return true
	})
	return s
}
