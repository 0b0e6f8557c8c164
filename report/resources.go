package report

import (
	"sort"
	"sync"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/segment"
)

// Resources (spec 8.4): counts computed when asked from what the broker
// already keeps in memory per partition (the oldest live offset, the
// visible mark, the __QUEUE_MODE__ cursor and its lease) and per queue (the
// DLQ log's offsets). Nothing reads message data except the one oldest
// message of each partition of a queue-detail answer. The spec allows the
// counts to be approximate; what comb reports:
//
//	total      retained visible messages (visible mark - oldest retained offset)
//	completed  retained messages at or before the queue-mode cursor; for a
//	           partition read only by named groups, before every group's cursor
//	processing messages under a live queue-mode lease after the cursor
//	pending    total - completed - processing
//	failed     0: a failed ack is retried or dead-lettered, never parked
//	deadLetter entries in the queue's DLQ log; per partition, those of its
//	           messages (dlqcount.go)
//
// Messages held by push maintenance are not counted until released. Messages
// past the queue's retentionSeconds or maxWaitTimeSeconds count nowhere, not
// even in total, once a pop or the sweep found them expired (read_expire.go):
// Queen's retention deletes those rows.

// MessageCounts are the message counts of a partition, queue or label.
type MessageCounts struct {
	Total, Pending, Processing, Completed, Failed, DeadLetter int64
}

func (c *MessageCounts) add(o MessageCounts) {
	c.Total += o.Total
	c.Pending += o.Pending
	c.Processing += o.Processing
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.DeadLetter += o.DeadLetter
}

// ResourceQueue is one row of GET /api/v1/resources/queues.
type ResourceQueue struct {
	ID, Name, Namespace, Task string
	CreatedAtMicros           int64
	Partitions                int
	Messages                  MessageCounts
}

// ResourcePartition is one partition of a queue detail.
type ResourcePartition struct {
	ID, Name        string
	CreatedAtMicros int64
	Stats           MessageCounts
	OldestMicros    int64 // segment timestamp of the oldest retained message; 0 = none
	NewestMicros    int64 // of the newest visible message; 0 = none
}

// ResourceQueueDetail is GET /api/v1/resources/queues/:queue.
type ResourceQueueDetail struct {
	ResourceQueue
	PartitionList []ResourcePartition
}

// ResourceLabel is one namespace or task with what carries it.
type ResourceLabel struct {
	Name               string
	Queues, Partitions int
	Messages           MessageCounts
}

// ResourceFilter selects and pages the queue list; Limit 0 = all.
type ResourceFilter struct {
	Namespace, Task string
	Limit, Offset   int
}

// LagStats summarises lags over the partitions that have pending messages.
type LagStats struct{ Avg, Median, Min, Max float64 }

// ResourceOverview is GET /api/v1/resources/overview.
type ResourceOverview struct {
	Queues, Partitions, Namespaces, Tasks int
	Messages                              MessageCounts
	TimeLagSeconds, OffsetLag             LagStats
	IngestedPerSecond, ProcessedPerSecond float64
	NowMicros                             int64
}

// rateSample remembers the push and ack counters at the previous overview,
// so throughput is the rate since then.
type rateSample struct {
	mu            sync.Mutex
	atMicros      int64
	pushed, acked uint64
}

// partCounts computes p's counts (see the comment at the top of the file).
func (rs *Reports) partCounts(p broker.PartitionView, nowMicros int64) MessageCounts {
	var c MessageCounts
	first, vis := p.LiveFrom(), p.Visible()
	if vis <= first {
		return c
	}
	c.Total = int64(vis - first)
	committed := first - 1
	if st, ok := rs.v.Cursor(p.ID(), broker.QueueModeGroup); ok {
		committed = min(max(committed, st.Committed), vis-1)
		if st.Lease.Live(nowMicros) {
			lo, hi := max(st.Lease.Start, committed+1), min(st.Lease.End, vis-1)
			if hi >= lo {
				c.Processing = int64(hi - lo + 1)
			}
		}
	} else if groups := rs.v.QueueOf(p).Groups(); len(groups) > 0 {
		low, seen := vis-1, false
		for g := range groups {
			if st, ok := rs.v.Cursor(p.ID(), g); ok {
				low, seen = min(low, st.Committed), true
			}
		}
		if seen {
			committed = min(max(committed, low), vis-1)
		}
	}
	c.Completed = int64(committed - (first - 1))
	c.Pending = c.Total - c.Completed - c.Processing
	return c
}

// dlqCount is the number of retained entries of q's DLQ log (0 when it was
// never written).
func (rs *Reports) dlqCount(q broker.QueueView) int64 {
	var n int64
	_ = q.WithDLQ(func(l broker.DLQLog) { n = int64(l.NextOffset() - l.FirstOffset()) })
	return n
}

func (rs *Reports) queueRow(q broker.QueueView, nowMicros int64) ResourceQueue {
	c := q.Conf()
	parts := q.Partitions()
	r := ResourceQueue{ID: q.IDString(), Name: q.Name(), Namespace: c.Namespace, Task: c.Task, CreatedAtMicros: q.CreatedAtMicros(), Partitions: len(parts)}
	for _, p := range parts {
		r.Messages.add(rs.partCounts(p, nowMicros))
	}
	r.Messages.DeadLetter = rs.dlqCount(q)
	return r
}

// ResourceQueues lists queues newest first (then by name), filtered by
// namespace and task and paged by f.Limit/f.Offset (spec 8.4).
func (rs *Reports) ResourceQueues(f ResourceFilter) []ResourceQueue {
	if err := rs.v.Enter(); err != nil {
		return nil
	}
	defer rs.v.Leave()
	now := rs.v.Now().UnixMicro()
	qs := rs.v.Queues()
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].CreatedAtMicros() > qs[j].CreatedAtMicros() })
	out := []ResourceQueue{}
	skip := max(f.Offset, 0)
	for _, q := range qs {
		c := q.Conf()
		if f.Namespace != "" && c.Namespace != f.Namespace || f.Task != "" && c.Task != f.Task {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		out = append(out, rs.queueRow(q, now))
	}
	return out
}

// PartitionPage picks the partitions a queue detail lists: Limit of them
// (<= 0: all) from Offset on, oldest first. The queue's totals and its
// partition count always cover every partition.
type PartitionPage struct{ Offset, Limit int }

// size is how many of n partitions the page lists.
func (pg PartitionPage) size(n int) int {
	n = max(n-pg.Offset, 0)
	if pg.Limit > 0 {
		n = min(n, pg.Limit)
	}
	return n
}

func (pg PartitionPage) holds(i int) bool {
	return i >= pg.Offset && (pg.Limit <= 0 || i-pg.Offset < pg.Limit)
}

// ResourceQueue answers one queue with the partitions of page (oldest
// first); ok is false for an unknown queue (HTTP 404). Only listed partitions
// pay for reading their oldest message's time, so a page bounds the files one
// request opens (docs/api.md, "Queue detail").
func (rs *Reports) ResourceQueue(name string, page PartitionPage) (ResourceQueueDetail, bool) {
	if err := rs.v.Enter(); err != nil {
		return ResourceQueueDetail{}, false
	}
	defer rs.v.Leave()
	q, ok := rs.v.Queue(name)
	if !ok {
		return ResourceQueueDetail{}, false
	}
	now := rs.v.Now().UnixMicro()
	c := q.Conf()
	parts := q.Partitions()
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].CreatedAtMicros() != parts[j].CreatedAtMicros() {
			return parts[i].CreatedAtMicros() < parts[j].CreatedAtMicros()
		}
		return parts[i].Name() < parts[j].Name()
	})
	d := ResourceQueueDetail{ResourceQueue: ResourceQueue{ID: q.IDString(), Name: q.Name(), Namespace: c.Namespace, Task: c.Task,
		CreatedAtMicros: q.CreatedAtMicros(), Partitions: len(parts)}, PartitionList: make([]ResourcePartition, 0, page.size(len(parts)))}
	buf := new(segment.ReadBuffer)
	dead := rs.dlqCountsByPartition(q)
	for i, p := range parts {
		rp := ResourcePartition{ID: p.IDString(), Name: p.Name(), CreatedAtMicros: p.CreatedAtMicros(), Stats: rs.partCounts(p, now)}
		rp.Stats.DeadLetter = dead[p.ID()]
		d.Messages.add(rp.Stats)
		if !page.holds(i) {
			continue
		}
		if rp.Stats.Total > 0 && !p.Damaged() {
			rp.NewestMicros = p.LastTimestamp()
			buf.Reset()
			if msgs, err := p.Read(p.LiveFrom(), 1, 1, buf); err == nil && len(msgs) > 0 {
				rp.OldestMicros = msgs[0].TimestampMicros
			}
		}
		d.PartitionList = append(d.PartitionList, rp)
	}
	d.Messages.DeadLetter = rs.dlqCount(q)
	return d, true
}

// ResourceNamespaces and ResourceTasks group the queues by label (queues
// without the label are left out), sorted by name.
func (rs *Reports) ResourceNamespaces() []ResourceLabel {
	return rs.resourceLabels(func(c broker.QueueConf) string { return c.Namespace })
}

// ResourceTasks: see ResourceNamespaces.
func (rs *Reports) ResourceTasks() []ResourceLabel {
	return rs.resourceLabels(func(c broker.QueueConf) string { return c.Task })
}

func (rs *Reports) resourceLabels(label func(broker.QueueConf) string) []ResourceLabel {
	if err := rs.v.Enter(); err != nil {
		return nil
	}
	defer rs.v.Leave()
	now := rs.v.Now().UnixMicro()
	by := make(map[string]*ResourceLabel)
	for _, q := range rs.v.Queues() {
		name := label(q.Conf())
		if name == "" {
			continue
		}
		l := by[name]
		if l == nil {
			l = &ResourceLabel{Name: name}
			by[name] = l
		}
		r := rs.queueRow(q, now)
		l.Queues++
		l.Partitions += r.Partitions
		l.Messages.add(r.Messages)
	}
	out := make([]ResourceLabel, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// maxTimeLagReads bounds the one-message reads of an overview's time lag.
const maxTimeLagReads = 1000

// lagHead is a partition with pending messages and its oldest pending offset.
type lagHead struct {
	p    broker.PartitionView
	from uint64
}

// ResourcesOverview answers spec 8.4's overview. Lags are over the
// partitions with pending messages for the queue-mode group: offset lag in
// messages, time lag in seconds (age of the oldest pending message, one
// one-message read per such partition, over an even sample of at most
// maxTimeLagReads of them). Throughput is pushed and acked (or
// auto-acked) messages per second since the previous overview.
func (rs *Reports) ResourcesOverview() ResourceOverview {
	if err := rs.v.Enter(); err != nil {
		return ResourceOverview{}
	}
	defer rs.v.Leave()
	now := rs.v.Now().UnixMicro()
	o := ResourceOverview{NowMicros: now}
	namespaces, tasks := make(map[string]bool), make(map[string]bool)
	var offLags, timeLags []float64
	var heads []lagHead
	buf := new(segment.ReadBuffer)
	for _, q := range rs.v.Queues() {
		c := q.Conf()
		o.Queues++
		if c.Namespace != "" {
			namespaces[c.Namespace] = true
		}
		if c.Task != "" {
			tasks[c.Task] = true
		}
		for _, p := range q.Partitions() {
			o.Partitions++
			pc := rs.partCounts(p, now)
			o.Messages.add(pc)
			if pc.Pending+pc.Processing == 0 {
				continue
			}
			offLags = append(offLags, float64(pc.Pending+pc.Processing))
			if !p.Damaged() {
				heads = append(heads, lagHead{p, p.Visible() - uint64(pc.Pending+pc.Processing)})
			}
		}
		o.Messages.DeadLetter += rs.dlqCount(q)
	}
	// The time lag costs a read per partition: over more than
	// maxTimeLagReads partitions it is taken from an even sample of them
	// (spec 8.4: counts may be approximate), so the overview stays bounded
	// (measured 2.5 s at 88,713 partitions when every one was read).
	stride := max(1, (len(heads)+maxTimeLagReads-1)/maxTimeLagReads)
	for i := 0; i < len(heads); i += stride {
		buf.Reset()
		if msgs, err := heads[i].p.Read(heads[i].from, 1, 1, buf); err == nil && len(msgs) > 0 {
			timeLags = append(timeLags, float64(max(now-msgs[0].TimestampMicros, 0))/1e6)
		}
	}
	o.Namespaces, o.Tasks = len(namespaces), len(tasks)
	o.OffsetLag, o.TimeLagSeconds = lagStats(offLags), lagStats(timeLags)
	o.IngestedPerSecond, o.ProcessedPerSecond = rs.throughput(now)
	return o
}

func lagStats(v []float64) LagStats {
	if len(v) == 0 {
		return LagStats{}
	}
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return LagStats{Avg: sum / float64(len(v)), Median: med, Min: v[0], Max: v[len(v)-1]}
}

func (rs *Reports) throughput(now int64) (ingested, processed float64) {
	s := &rs.rates
	s.mu.Lock()
	defer s.mu.Unlock()
	pushed, acked := rs.v.MessageTotals()
	if s.atMicros != 0 && now > s.atMicros {
		secs := float64(now-s.atMicros) / 1e6
		ingested = float64(pushed-s.pushed) / secs
		processed = float64(acked-s.acked) / secs
	}
	s.atMicros, s.pushed, s.acked = now, pushed, acked
	return ingested, processed
}
