package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/broker/ready"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/segment"
)

// popCtx is one pop attempt's shared parameters.
type popCtx struct {
	req       PopRequest
	group     string
	queueMode bool
	discovery bool                // no queue named: every queue whose labels match (spec 3.1)
	sub       cursor.Subscription // this request's intent (first contact, targeted seeding)
	nowMicros int64
	leaseID   [16]byte
	budget    int // messages still wanted (batch)
	bytesLeft int // payload bytes still allowed in the response (maxPopBytes)
	parts     int
	res       *PopResult
	bufs      []*segment.ReadBuffer
	dirty     bool    // something changed in the cursor engine: Wait before answering
	undo      undoLog // the claims of this pass, released if they cannot be made durable
	// early are the partitions this pass claimed from past their visible
	// mark, earlyTail the ticket its answer waits for besides the
	// checkpoint (write_early.go).
	early     []earlyClaim
	earlyTail walTicket
	// nextDue is the earliest µs (broker clock) at which a partition this pass
	// saw held back (delayedProcessing, windowBuffer, a live lease) becomes
	// claimable; 0 = none. A parked pop re-checks then instead of waiting out
	// its backoff.
	nextDue int64
}

// noteDue records that something becomes claimable at until (µs).
func (pc *popCtx) noteDue(until int64) {
	if until > 0 && (pc.nextDue == 0 || until < pc.nextDue) {
		pc.nextDue = until
	}
}

var readBufPool = sync.Pool{New: func() any { return new(segment.ReadBuffer) }}

// messagesPool recycles the Messages of released pop results (*[]Message):
// 100 messages are ~17.6 KB of pointer-bearing memory a pop would otherwise
// allocate, zero and hand to the garbage collector.
var messagesPool sync.Pool

// maxPooledMessages is the capacity a pop's Messages start with at most, and
// the largest one the pool keeps.
const maxPooledMessages = 1024

// getMessages is an empty Messages slice with room for n (n <= maxPooledMessages).
func getMessages(n int) []Message {
	if p, ok := messagesPool.Get().(*[]Message); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]Message, 0, n)
}

// putMessages recycles ms once nothing uses it; its elements are cleared
// first so that the pool holds no payloads or strings.
func putMessages(ms []Message) {
	if cap(ms) == 0 || cap(ms) > maxPooledMessages {
		return
	}
	clear(ms)
	ms = ms[:0]
	messagesPool.Put(&ms)
}

// maxReadBytes bounds one read of an ack's span; at least one message is
// always returned whatever its size.
const maxReadBytes = 32 << 20

// maxPopBytes bounds the payload bytes of one pop response, over all the
// partitions it claims: `partitions=N&batch=10000` over large messages used to
// build N × maxReadBytes in memory (issue 10). Claiming stops once the budget
// is spent; the read that crosses it keeps its last message, so a pop still
// returns at least one message when one is ready, whatever its size, and the
// response holds at most maxPopBytes plus one message.
const maxPopBytes = 32 << 20

// room reports whether the pop may claim another partition: messages, bytes
// and partitions all left.
func (pc *popCtx) room() bool {
	return pc.budget > 0 && pc.bytesLeft > 0 && pc.parts > 0
}

// Pop claims and returns messages (spec 3, seed 000) for one of the three
// shapes: wildcard (req.Queue), targeted (req.Queue + req.Partition) or
// discovery (req.Namespace / req.Task). A result with no messages means 204.
//
// With req.Wait a pop that finds nothing parks holding no lock and no file
// until a push to a target queue wakes it (coalesced on a 5 ms tick), its
// backoff re-check (100 ms ×3, doubling, capped at 1 s) or the moment a held
// back partition becomes claimable (delayedProcessing, windowBuffer, lease
// expiry), whichever is first; or until req.Timeout, ctx cancellation or
// Close, when it answers with no messages. After every park it re-verifies
// ctx, and the liveness check of WithAliveCheck if ctx carries one, before it
// claims anything: a pop whose client went away claims nothing (spec 3.6).
//
// Durability: a claimed span (or an autoAck commit) is answered only after the
// cursor checkpoint holding it is durable (seed 004), and after the commit of
// the pushes it claimed from, which a pop may claim before it is durable
// (write_early.go); when either fails, the pop claims nothing and answers the
// error.
//
// Errors: ErrBadRequest for a discovery pop without namespace and task
// ("namespace or task is required") or an unparsable subscriptionFrom
// ("invalid subscriptionFrom"); ErrClosed; storage errors.
func (b *Broker) Pop(ctx context.Context, req PopRequest) (PopResult, error) {
	if err := b.enterConsume(ctx); err != nil {
		return PopResult{}, err
	}
	defer b.leave()
	if b.mm.pop.Load() {
		// Pop maintenance (spec 8.8: "every pop answers a bodiless 204"): at
		// once, before any validation, nothing claimed.
		return PopResult{}, nil
	}
	pc, err := b.newPopCtx(req)
	if err != nil {
		return PopResult{}, err
	}
	b.stats.popRequests.Add(1)
	if !pc.req.Wait {
		return b.popAnswer(b.popOnce(&pc, false))
	}
	return b.longPoll(ctx, &pc)
}

// newPopCtx validates req and fills in its defaults (group, batch and
// partition caps, the subscription intent). Errors: see Pop.
func (b *Broker) newPopCtx(req PopRequest) (popCtx, error) {
	discovery := req.Queue == ""
	if discovery && req.Namespace == "" && req.Task == "" {
		return popCtx{}, BadRequest("namespace or task is required")
	}
	if req.Group == "" {
		req.Group = QueueModeGroup
	}
	req.Batch = min(max(req.Batch, 1), b.cfg.MaxBatch)
	req.Partitions = max(req.Partitions, 1)
	if req.Partition != "" {
		req.Partitions = 1
	}
	pc := popCtx{req: req, group: req.Group, queueMode: req.Group == QueueModeGroup, discovery: discovery}
	sub, err := cursor.ParseSubscription(req.SubscriptionMode, req.SubscriptionFrom, b.now().UnixMicro())
	if err != nil && !pc.queueMode {
		return popCtx{}, BadRequest("invalid subscriptionFrom")
	}
	if pc.queueMode {
		// seed 000: queue mode always reads from the oldest retained offset.
		sub = cursor.Subscription{Mode: cursor.SubAll}
	}
	pc.sub = sub
	return pc, nil
}

// popAnswer is what Pop returns for one pass's outcome, counted in the stats.
func (b *Broker) popAnswer(res popOutcome, err error) (PopResult, error) {
	if len(res.Messages) > 0 {
		b.stats.popMessages.Add(uint64(len(res.Messages)))
	}
	return res.PopResult, err
}

// popOutcome is one pass of a pop: its result, and for a pop that may wait
// the minPopWaitTime verdict and when a held-back partition becomes due.
type popOutcome struct {
	PopResult
	minWait time.Duration
	nextDue int64 // µs; see popCtx.nextDue
}

// popOnce makes one pass: it claims what it can and returns it, or nothing.
func (b *Broker) popOnce(pc *popCtx, mayMinWait bool) (popOutcome, error) {
	now := b.now()
	pc.nowMicros = now.UnixMicro()
	pc.leaseID = newV7()
	pc.budget, pc.bytesLeft, pc.parts = pc.req.Batch, maxPopBytes, pc.req.Partitions
	pc.bufs, pc.dirty, pc.nextDue, pc.undo = nil, false, 0, pc.undo[:0]
	pc.early, pc.earlyTail = pc.early[:0], walTicket{}
	res := PopResult{Queue: pc.req.Queue, Group: pc.group}
	pc.res = &res
	var out popOutcome
	var err error
	switch {
	case pc.req.Partition != "":
		err = b.popTargeted(pc)
	case pc.discovery:
		res.Queue = ""
		err = b.popDiscovery(pc)
	default:
		var mw time.Duration
		mw, err = b.popWildcard(pc, mayMinWait)
		out.minWait = mw
	}
	if err == nil && pc.dirty {
		// seed 004: the answer waits for the checkpoint holding the claim.
		err = b.cur.Wait()
	}
	if err == nil {
		// ...and for the pushes of what it claimed before their commit.
		err = b.waitEarly(pc)
	}
	if err != nil {
		// Nobody gets these messages: release the claims (issue 10, no
		// phantom leases; a seeded cursor or a stored subscription stays,
		// it is decided once and written with the next good checkpoint).
		b.undoCursorChanges(pc.undo)
	}
	if len(res.Messages) > 0 && !pc.req.AutoAck {
		res.LeaseID = uuidString(pc.leaseID)
	}
	bufs, msgs := pc.bufs, res.Messages
	var released atomic.Bool
	res.release = func() {
		// Copies of the result share this func: recycle once whichever
		// copy releases (a second Put would hand one buffer to two pops).
		if released.Swap(true) {
			return
		}
		for _, rb := range bufs {
			rb.Reset()
			readBufPool.Put(rb)
		}
		putMessages(msgs)
	}
	if err != nil || len(res.Messages) == 0 {
		res.Release()
		out.PopResult = PopResult{}
		out.nextDue = pc.nextDue
		return out, b.closedErr(err)
	}
	out.PopResult = res
	return out, nil
}

// popWildcard claims from up to req.Partitions ready partitions of one queue,
// oldest ready first (spec 3.5). With mayMinWait it may instead report how
// long to wait for a fuller batch (minPopWaitTime).
func (b *Broker) popWildcard(pc *popCtx, mayMinWait bool) (time.Duration, error) {
	q := b.lookupQueue(pc.req.Queue)
	if q == nil {
		return 0, b.subscribeMissingQueue(pc, pc.req.Queue)
	}
	g, err := b.groupReadyFor(pc, q)
	if err != nil {
		return 0, err
	}
	if mayMinWait && pc.req.Batch > 1 {
		if mw := q.options().MinPopWaitTime; mw > 0 {
			if n := b.pendingEstimate(pc, g); n > 0 && n < int64(pc.req.Batch) {
				return time.Duration(min(mw, 60000)) * time.Millisecond, nil
			}
		}
	}
	err = b.claimFrom(pc, q, g)
	if pc.res.PartitionsClaimed == 0 {
		pc.noteDue(g.NextDeferred())
	}
	return 0, err
}

// claimFrom walks g's candidates until the message, byte or partition budget
// is spent.
func (b *Broker) claimFrom(pc *popCtx, q *queue, g *groupReady) error {
	var skip map[*partition]bool
	for pc.room() {
		p, seq, ok := g.Take(pc.nowMicros, skip)
		if !ok {
			return nil
		}
		cl, err := b.claim(pc, p)
		g.Finish(p, seq, cl.verdict, cl.key, cl.until)
		if errors.Is(err, ErrDamaged) {
			// Out of service (damage.go): the queue's other partitions keep
			// serving; the verdict dropped p from the candidates.
			continue
		}
		if err != nil {
			return err
		}
		if cl.verdict == ready.Again && cl.n == 0 {
			if skip == nil {
				skip = make(map[*partition]bool)
			}
			skip[p] = true
		}
	}
	return nil
}

// popDiscovery claims across every queue whose labels match (spec 3.1),
// taking each time the queue whose oldest ready partition is oldest.
func (b *Broker) popDiscovery(pc *popCtx) error {
	var qs []*queue
	for _, q := range b.sortedQueues() {
		c := q.conf.Load()
		if (pc.req.Namespace == "" || c.namespace == pc.req.Namespace) && (pc.req.Task == "" || c.task == pc.req.Task) {
			qs = append(qs, q)
		}
	}
	gs := make([]*groupReady, len(qs))
	for i, q := range qs {
		g, err := b.groupReadyFor(pc, q)
		if err != nil {
			return err
		}
		gs[i] = g
	}
	exhausted := make([]bool, len(qs))
	for pc.room() {
		best := -1
		var bestKey int64
		for i, g := range gs {
			if exhausted[i] {
				continue
			}
			k, ok := g.PeekKey(pc.nowMicros)
			if !ok {
				exhausted[i] = true
				continue
			}
			if best < 0 || k < bestKey {
				best, bestKey = i, k
			}
		}
		if best < 0 {
			if pc.res.PartitionsClaimed == 0 {
				for _, g := range gs {
					pc.noteDue(g.NextDeferred())
				}
			}
			return nil
		}
		saved := pc.parts
		pc.parts = 1
		err := b.claimFrom(pc, qs[best], gs[best])
		claimed := 1 - pc.parts
		pc.parts = saved - claimed
		if claimed == 0 {
			// Only stale or held candidates in that queue: try the others.
			exhausted[best] = true
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// popTargeted claims exactly one named partition (spec 3.1). It registers no
// subscription: a partition the group never touched is seeded from this
// request's intent (or the stored record, if a wildcard pop made one).
func (b *Broker) popTargeted(pc *popCtx) error {
	q := b.lookupQueue(pc.req.Queue)
	if q == nil {
		return nil
	}
	p := q.partition(pc.req.Partition)
	if p == nil {
		return nil
	}
	cl, err := b.claim(pc, p)
	if cl.verdict == ready.Later {
		pc.noteDue(cl.until)
	}
	return err
}
