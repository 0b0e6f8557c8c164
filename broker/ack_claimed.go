package broker

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// claimedTxids remembers the transaction ids of the span a group's pop last
// leased on a partition, so that the ack of that batch resolves them to
// offsets without reading and decoding the span's segment again (issue 14:
// that read was about half of Broker.Ack's CPU, the same read the pop had
// just made). A stored message's offset and transaction id never change, so
// an entry holds facts, never stale state: a hit gives exactly what the read
// would have given, and whatever it does not answer takes the old path.
//
// Entries live under the partition lock, one per group, replaced by the
// group's next lease on the partition and dropped when an ack releases the
// lease, the partition's log is evicted or its queue deleted. Their bytes
// count against claimedBudgetBytes over the whole broker; past it a claim
// keeps nothing and its ack reads the span as before, so a broker with many
// unacknowledged leases (100,000 partitions) does not grow by their ids.
type claimedTxids struct {
	group string
	ids   []byte   // the transaction ids, concatenated in offset order
	ends  []uint32 // ids[ends[i-1]:ends[i]] is the id of offs[i]
	offs  []uint64
}

// claimedPool recycles the entries a released lease or the group's next lease
// drops: each pop of a batch remembered its ids in five allocations (~5 KB
// for 100 messages), and the ack released them a moment later. An entry is
// reached only under its partition's lock, and nothing holds one once it is
// dropped, so it is free for the next claim at once.
var claimedPool = sync.Pool{New: func() any { return new(claimedTxids) }}

// maxPooledClaimed keeps an entry of a huge batch from pinning its slices.
const maxPooledClaimed = 64 << 10

// recycle pools c; the caller has dropped every reference to it.
func (c *claimedTxids) recycle() {
	if cap(c.ids) > maxPooledClaimed || cap(c.offs) > maxPooledClaimed/8 {
		return
	}
	c.group, c.ids, c.ends, c.offs = "", c.ids[:0], c.ends[:0], c.offs[:0]
	claimedPool.Put(c)
}

// claimedBudgetBytes bounds the bytes all claimedTxids hold together: about
// 6,500 leased batches of 100 messages with 36-byte ids, far more than the
// consumers of a broker hold at once, and small next to issue 14's 250 MB
// for 50 M stored messages.
const claimedBudgetBytes = 32 << 20

func (c *claimedTxids) bytes() int64 {
	return int64(len(c.ids) + 4*len(c.ends) + 8*len(c.offs) + len(c.group) + 64)
}

// txid is the id of offs[i], a view of c.ids: valid while the caller holds the
// partition lock under which it read c (the entry may be recycled after).
func (c *claimedTxids) txid(i int) string {
	start := uint32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	b := c.ids[start:c.ends[i]]
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// claimedBudget is the broker-wide count of bytes held by claimedTxids.
type claimedBudget struct{ used atomic.Int64 }

// rememberClaimedLocked records msgs (non-empty, ascending offsets) as the
// span group leased on p. The caller holds p.mu.
func (b *Broker) rememberClaimedLocked(p *partition, group string, msgs []segment.Message) {
	p.forgetClaimedLocked(&b.claimed, group)
	n := 0
	for i := range msgs {
		n += len(msgs[i].TransactionID)
	}
	need := int64(n + 12*len(msgs) + len(group) + 64)
	if b.claimed.used.Add(need) > claimedBudgetBytes {
		b.claimed.used.Add(-need)
		return
	}
	c := claimedPool.Get().(*claimedTxids)
	c.group = group
	if cap(c.ids) < n {
		c.ids = make([]byte, 0, n)
	}
	if cap(c.offs) < len(msgs) {
		c.ends, c.offs = make([]uint32, 0, len(msgs)), make([]uint64, 0, len(msgs))
	}
	ids, ends, offs := c.ids[:0], c.ends[:0], c.offs[:0]
	for i := range msgs {
		ids = append(ids, msgs[i].TransactionID...)
		ends = append(ends, uint32(len(ids)))
		offs = append(offs, msgs[i].Offset)
	}
	c.ids, c.ends, c.offs = ids, ends, offs // need == c.bytes(), what forget subtracts
	p.claimed = append(p.claimed, c)
}

// forgetClaimedLocked drops group's entry on p, if any. The caller holds p.mu.
func (p *partition) forgetClaimedLocked(budget *claimedBudget, group string) {
	for i, c := range p.claimed {
		if c.group == group {
			budget.used.Add(-c.bytes())
			last := len(p.claimed) - 1
			p.claimed[i] = p.claimed[last]
			p.claimed[last] = nil
			p.claimed = p.claimed[:last]
			c.recycle()
			return
		}
	}
}

// forgetAllClaimedLocked drops every entry on p (eviction, queue deletion).
// The caller holds p.mu.
func (p *partition) forgetAllClaimedLocked(budget *claimedBudget) {
	for i, c := range p.claimed {
		budget.used.Add(-c.bytes())
		p.claimed[i] = nil
		c.recycle()
	}
	p.claimed = nil
}

// claimedForLocked is group's entry on p, or nil. The caller holds p.mu.
func (p *partition) claimedForLocked(group string) *claimedTxids {
	for _, c := range p.claimed {
		if c.group == group {
			return c
		}
	}
	return nil
}

// resolveClaimedLocked sets the Offset of each ack whose transactionId is in
// group's remembered span on p and inside span (the lease as it stands) and
// below vis, as the read of the span in resolveOffsetsLocked would; it
// returns the acks it did not resolve (their positions in acks), nil when it
// resolved them all. Acks of a popped batch come in the batch's order, so each
// is tried against the entry after the previous match before a map is built.
// The caller holds p.mu.
func resolveClaimedLocked(p *partition, group string, acks []lease.Ack, txid func(i int) string, span lease.Lease) (rest []int) {
	c := p.claimedForLocked(group)
	if c == nil || !span.Held() {
		rest = make([]int, len(acks))
		for j := range rest {
			rest[j] = j
		}
		return rest
	}
	vis := p.visible.Load()
	var byID map[string]int
	next := 0
	for j := range acks {
		tx := txid(acks[j].Index)
		i := -1
		if next < len(c.offs) && c.txid(next) == tx {
			i = next
		} else {
			if byID == nil {
				byID = make(map[string]int, len(c.offs))
				for k := range c.offs {
					byID[c.txid(k)] = k
				}
			}
			if k, ok := byID[tx]; ok {
				i = k
			}
		}
		if i >= 0 {
			next = i + 1
			if off := c.offs[i]; off >= span.Start && off <= span.End && off < vis {
				acks[j].Offset = off
				continue
			}
		}
		rest = append(rest, j)
	}
	return rest
}
