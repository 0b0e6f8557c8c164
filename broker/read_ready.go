package broker

import (
	"github.com/combmq/comb/broker/ready"
	"github.com/combmq/comb/cursor"
)

// groupReady is the ready set of one (queue, consumer group): the partitions
// that probably have work for the group (package ready). Everything in it is
// re-verified under the partition lock at claim time.
type groupReady = ready.Set[*partition]

func newGroupReady() *groupReady { return ready.New[*partition]() }

// leaseReleased updates (p's queue, group)'s ready structure after the group's
// lease on p went away: p is a candidate again when messages are pending past
// the cursor; otherwise its entry, deferred until the old lease's expiry, is
// dropped so that the next push re-arms it (a push leaves deferred entries
// alone because it cannot tell a live lease from a released one).
func (b *Broker) leaseReleased(p *partition, group string, now int64) {
	st, _ := b.cur.Get(cursor.Key{Partition: p.id, Group: group})
	if st.Committed+1 < p.claimableEnd() {
		b.touchGroup(p, group, now)
		return
	}
	p.q.mu.RLock()
	g := p.q.groups[group]
	p.q.mu.RUnlock()
	if g != nil {
		g.Released(p)
	}
}

// touchGroup tells (p's queue, group)'s ready structure that p has work again.
func (b *Broker) touchGroup(p *partition, group string, key int64) {
	p.q.mu.RLock()
	g := p.q.groups[group]
	p.q.mu.RUnlock()
	if g != nil {
		g.Touch(p, key)
	}
}
