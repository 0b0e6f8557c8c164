package report

import (
	"sort"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/notes"
)

// Message statuses of the message routes (spec 8.5).
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusDeadLetter = "dead_letter"
)

// MessageMode says who reads the messages listed (spec 8.5 "mode"):
// __QUEUE_MODE__, named groups ("bus"), both ("hybrid") or nobody yet.
type MessageMode struct {
	HasQueueMode     bool
	BusGroupsCount   int
	ConsumedByGroups int // detail only: named groups that consumed the message
	Type             string
}

// groupView is one group's state on one partition.
type groupView struct {
	name string
	st   lease.State
	has  bool // the group has a cursor on the partition
}

// msgView is what the status of a partition's messages depends on: the
// groups reading its queue and their states there. Status is relative to
// __QUEUE_MODE__ when it reads the queue (or nobody does), else to every
// named group (spec 8.5).
type msgView struct {
	queue string      // the partition's queue
	qm    *groupView  // nil when __QUEUE_MODE__ has no cursor on the queue
	named []groupView // sorted by name
	refs  []groupView // the groups status is relative to
	now   int64
	dlq   map[uint64][]dlqHit // this partition's dead-letterings in the window, by offset
}

// viewMessages reads the cursors of the queue's groups on p: one map
// lookup per group.
func (rs *Reports) viewMessages(p broker.PartitionView, now int64) *msgView {
	q := rs.v.QueueOf(p)
	v := &msgView{queue: q.Name(), now: now}
	names := make([]string, 0, 4)
	for g := range q.Groups() {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		st, ok := rs.v.Cursor(p.ID(), g)
		gv := groupView{name: g, st: st, has: ok}
		if g == broker.QueueModeGroup {
			v.qm = &gv
		} else {
			v.named = append(v.named, gv)
		}
	}
	switch {
	case v.qm != nil:
		v.refs = []groupView{*v.qm}
	case len(v.named) > 0:
		v.refs = v.named
	default:
		v.refs = []groupView{{name: broker.QueueModeGroup}}
	}
	return v
}

// queueMode is the mode of one queue (its group names, no cursor read).
func queueMode(q broker.QueueView) MessageMode {
	var m MessageMode
	for g := range q.Groups() {
		if g == broker.QueueModeGroup {
			m.HasQueueMode = true
		} else {
			m.BusGroupsCount++
		}
	}
	m.Type = modeType(m.HasQueueMode, m.BusGroupsCount)
	return m
}

func modeType(qm bool, bus int) string {
	switch {
	case qm && bus > 0:
		return "hybrid"
	case qm:
		return "queue"
	case bus > 0:
		return "bus"
	}
	return "none"
}

// groupStatus is the status of offset off for one group: dead-lettered by
// it, at or before its cursor, inside its live lease, or pending.
func (v *msgView) groupStatus(g *groupView, ref notes.MessageRef) string {
	for _, h := range v.dlq[ref.Offset] {
		if h.group == g.name {
			return StatusDeadLetter
		}
	}
	switch {
	case g.has && ref.Offset <= g.st.Committed:
		return StatusCompleted
	case g.leases(ref.Offset, v.now):
		return StatusProcessing
	}
	return StatusPending
}

func (g *groupView) leases(off uint64, now int64) bool {
	return g.has && g.st.Lease.Live(now) && off >= g.st.Lease.Start && off <= g.st.Lease.End
}

// status is a message's status relative to the reference groups: processing
// if one holds it leased, else pending if one has yet to consume it, else
// dead_letter if one dead-lettered it, else completed.
func (v *msgView) status(ref notes.MessageRef) string {
	seen := [4]bool{}
	for i := range v.refs {
		switch v.groupStatus(&v.refs[i], ref) {
		case StatusProcessing:
			seen[0] = true
		case StatusPending:
			seen[1] = true
		case StatusDeadLetter:
			seen[2] = true
		default:
			seen[3] = true
		}
	}
	switch {
	case seen[0]:
		return StatusProcessing
	case seen[1]:
		return StatusPending
	case seen[2]:
		return StatusDeadLetter
	}
	return StatusCompleted
}

// leaseExpiry is the latest expiry (µs) of a live lease of a reference group
// over off; 0 when none.
func (v *msgView) leaseExpiry(off uint64) int64 {
	var exp int64
	for i := range v.refs {
		if g := &v.refs[i]; g.leases(off, v.now) {
			exp = max(exp, g.st.Lease.ExpiresAtMicros)
		}
	}
	return exp
}

// consumedBy counts the named groups that are done with off (committed past
// it, dead-lettered included).
func (v *msgView) consumedBy(off uint64) int {
	n := 0
	for i := range v.named {
		if g := &v.named[i]; g.has && off <= g.st.Committed {
			n++
		}
	}
	return n
}

// span narrows [lo, hi] to the offsets that can have status (a superset;
// each message is still checked): ok=false when none can.
func (v *msgView) span(status string, lo, hi uint64) (uint64, uint64, bool) {
	switch status {
	case "":
	case StatusCompleted:
		var c uint64
		for _, g := range v.refs {
			c = max(c, g.st.Committed)
		}
		hi = min(hi, c)
	case StatusPending:
		c := ^uint64(0)
		for _, g := range v.refs {
			c = min(c, g.st.Committed)
		}
		lo = max(lo, c+1)
	case StatusProcessing:
		a, z, any := ^uint64(0), uint64(0), false
		for i := range v.refs {
			if g := &v.refs[i]; g.has && g.st.Lease.Live(v.now) {
				a, z, any = min(a, g.st.Lease.Start), max(z, g.st.Lease.End), true
			}
		}
		if !any {
			return 0, 0, false
		}
		lo, hi = max(lo, a), min(hi, z)
	case StatusDeadLetter:
		a, z, any := ^uint64(0), uint64(0), false
		for off := range v.dlq {
			a, z, any = min(a, off), max(z, off), true
		}
		if !any {
			return 0, 0, false
		}
		lo, hi = a, z
	default:
		return 0, 0, false // not a status: nothing matches
	}
	return lo, hi, lo <= hi
}
