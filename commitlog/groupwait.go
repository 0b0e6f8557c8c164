package commitlog

import (
	"sync/atomic"
	"time"
)

// The group-commit wait (Options.GroupCommitWait): a bounded delay before
// the committer writes a batch, so that one fdatasync serves more callers
// when several are known to be coming. It is PostgreSQL's commit_delay and
// commit_siblings idea with a different trigger: instead of a fixed sleep
// whenever enough transactions are open, the committer waits for a count
// of waiters it has already seen at once, and stops the moment they are
// there.
//
// The rule, decided by waitTarget and waitOver:
//
//   - peak is the most tickets blocked in Wait at one moment since the
//     committer took its previous batch (every caller that will wait,
//     whichever batch it waits on). In a closed loop of C callers it rises
//     to C within a few groups; a caller that leaves lowers it after one
//     group.
//   - gap is the mean time between two callers' Waits over the recent
//     groups (an average over groups, each group's time since the one
//     before divided by its new waiters, weighted 1/4 for the newest).
//   - The committer waits only under SyncAlways, with a cap above zero,
//     when peak is at least minSiblings (2) and gap is at most the cap over
//     minGather (4): a lone caller never waits, nor does a batch nobody
//     waits on, nor do callers too sparse for the cap to gather four more
//     at the recent rate (a moderate load, where the syncs cost little and
//     a wait would mostly add latency).
//   - It waits until the batch has peak waiters or the cap has passed since
//     it woke for the batch, whichever comes first (or Close).
//   - A batch holding an urgent entry (Options.Urgent: the broker names its
//     consumers' entries urgent while the process has CPU to spare) is
//     never held: it is written at once, and one that
//     arrives during a wait ends it. Pushes answer producers, pops and acks
//     answer consumers: with a 5 ms cap and no such rule, 200 long-polling
//     consumers fed 1,000 msg/s saw their end-to-end p50 go from 2.3 to
//     8.5 ms (each woken pop's checkpoint waited for company).

// minSiblings is the fewest callers seen waiting at once for the committer
// to wait for more: with one, there is no one else to wait for.
const minSiblings = 2

// minGather is the fewest callers a wait must be expected to gather (the cap
// over the recent gap) to be worth its latency. Four: at 500 requests/s
// (2 ms apart, the server far from busy) a 5 ms cap never waits; at 800/s
// and more it does (docs/benchmarks.md, "Group-commit wait").
const minGather = 4

// waitTarget returns how many waiters the committer waits for before it
// writes a batch; 0 = write at once. peak is the most tickets blocked in Wait
// at one moment since the previous batch was taken, gap the recent mean time
// between two callers' Waits.
func waitTarget(maxWait time.Duration, policy SyncPolicy, peak int64, gap time.Duration) int64 {
	if maxWait <= 0 || policy != SyncAlways || peak < minSiblings || gap > maxWait/minGather {
		return 0
	}
	return peak
}

// nextGap folds one group into the mean gap between callers: dt since the
// previous group was taken, n callers that started waiting meanwhile (none
// counts as one: a quiet stretch lengthens the gap). A sample is clamped to
// gapClamp, so that after an idle minute a few busy groups bring the mean
// back down.
func nextGap(mean, dt time.Duration, n uint64) time.Duration {
	sample := min(dt/time.Duration(max(n, 1)), gapClamp)
	return (3*mean + sample) / 4
}

// gapClamp is the longest gap sample (see nextGap); also the mean gap at
// Open, before anything is known: no wait until callers are seen coming.
const gapClamp = 100 * time.Millisecond

// waitOver reports whether the committer stops waiting: the batch holds
// target waiters, or waited (since the committer woke for it) reached
// maxWait.
func waitOver(waiters, target int64, waited, maxWait time.Duration) bool {
	return waiters >= target || waited >= maxWait
}

// GroupStats counts what the group-commit wait did since Open.
type GroupStats struct {
	// Groups is the batches the committer wrote.
	Groups uint64
	// Waited is the batches it waited for (waitTarget above zero).
	Waited uint64
	// Capped is the waits that ended at the cap, target not reached.
	Capped uint64
	// WaitMicros is the time spent waiting, all batches (µs).
	WaitMicros uint64
	// Waiters is the tickets that waited on a written batch, all batches:
	// Waiters/Groups is the mean group size in callers.
	Waiters uint64
}

// groupWait is the committer's side of the wait; the counters are atomics
// because Wait (any goroutine) updates them.
type groupWait struct {
	entered   atomic.Uint64 // tickets that blocked in Wait since Open
	blocked   atomic.Int64  // tickets blocked in Wait now
	peak      atomic.Int64  // most blocked at once since the committer took its last batch
	lingering atomic.Bool   // the committer is waiting: Wait wakes it (wake)
	wake      chan struct{}

	// Committer only: when it took the previous batch, entered then, and
	// the mean gap between callers (nextGap).
	lastTake    time.Time
	lastEntered uint64
	gap         time.Duration

	groups, waited, capped, waitMicros, waiters atomic.Uint64
}

// enter notes a caller blocking on b and wakes a waiting committer.
func (g *groupWait) enter(b *batch) {
	g.entered.Add(1)
	n := g.blocked.Add(1)
	for {
		if p := g.peak.Load(); n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	b.waiters.Add(1)
	g.nudge()
}

func (g *groupWait) leave() { g.blocked.Add(-1) }

// nudge wakes a committer that is gathering, to look at the batch again: a
// caller started waiting on it (enter) or an urgent entry joined it
// (Append). The caller changed the batch before, and the committer sets
// lingering before it reads the batch: one of the two sees the other.
func (g *groupWait) nudge() {
	if g.lingering.Load() {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// took is the committer's note that it took a batch: the next wait's peak
// counts from who waits now (on that batch), and the gap takes this group in.
func (g *groupWait) took(now time.Time) {
	g.peak.Store(g.blocked.Load())
	e := g.entered.Load()
	g.gap = nextGap(g.gap, now.Sub(g.lastTake), e-g.lastEntered)
	g.lastTake, g.lastEntered = now, e
}

// gather waits, per the rule above, before the committer takes the batch
// being gathered. It returns at once when there is nothing to wait for.
func (l *Log) gather() {
	l.mu.Lock()
	b := l.pend
	l.mu.Unlock()
	target := waitTarget(l.opts.GroupCommitWait, l.opts.Sync, l.group.peak.Load(), l.group.gap)
	if b == nil || target == 0 || b.urgent.Load() {
		return
	}
	g := &l.group
	start := time.Now()
	timer := time.NewTimer(l.opts.GroupCommitWait)
	defer timer.Stop()
	g.lingering.Store(true)
	defer g.lingering.Store(false)
	capped := false
	for !b.urgent.Load() && !waitOver(b.waiters.Load(), target, time.Since(start), l.opts.GroupCommitWait) {
		select {
		case <-g.wake:
		case <-timer.C:
			capped = true
		case <-l.stop:
			capped = true
		}
		if capped {
			break
		}
	}
	g.waited.Add(1)
	if capped || b.waiters.Load() < target && !b.urgent.Load() {
		g.capped.Add(1)
	}
	g.waitMicros.Add(uint64(time.Since(start).Microseconds()))
}

// GroupStats returns what the group-commit wait did since Open.
func (l *Log) GroupStats() GroupStats {
	g := &l.group
	return GroupStats{Groups: g.groups.Load(), Waited: g.waited.Load(), Capped: g.capped.Load(),
		WaitMicros: g.waitMicros.Load(), Waiters: g.waiters.Load()}
}
