package broker

import (
	"sort"

	"github.com/combmq/comb/broker/ready"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

// Retention a client can observe (spec 2.2; Queen's JS tests retentionTest
// and retentionTestMaxTime). Retention by whole file (maint_retention.go)
// never removes the active file, so without more a message past its queue's
// retentionSeconds or maxWaitTimeSeconds stayed poppable as long as its
// file stayed active. Queen deletes such messages row by row: after its
// sweep they are gone for every consumer and every count. comb gets the same
// outcome without rewriting files: each partition keeps a logical low-water
// mark, expiredBelow, the offset below which its messages are expired, and
// every reader starts at liveFrom() = max(first retained offset,
// expiredBelow) instead of the first retained offset.
//
// expiredBelow only rises (an expired message stays gone, as a deleted row
// does, even if the queue's horizon is lengthened later). It lives in
// memory only: after a restart the first pop or sweep that meets an expired
// message finds it again from the timestamps, which is why nothing about it
// needs to be durable.
//
// Cost. A claim reads as before and then compares one timestamp, that of
// the first message read (segment timestamps never decrease along a log, so
// if the first is not expired none is). Only when it is expired does the
// claim look the boundary up with the segment time index
// (segment.Log.OffsetAtOrAfterTime: O(log files + log segments), no
// decoding) and read once more from there; the expired range itself is
// never decoded beyond that first batch. The maintenance sweep raises the
// mark too (expirePartition), so the reports count expired messages as gone
// even when no pop came by.
//
// In the counts (the resources, consumer-group and maxSize views) an expired
// message is nothing: not pending, not completed, not in the total, as a row
// Queen's retention or eviction deleted.

// readLiveSpanLocked is readSpanLocked for a claim of p from offset from,
// minus what is expired (spec 2.2): when the first message read is past the
// queue's horizon it skips to the first live offset and reads again. It
// returns the messages, the offset the claim now starts at (the cursor goes
// up to it), and the claim result and error of readSpanLocked.
// The caller holds p.mu.
func (b *Broker) readLiveSpanLocked(pc *popCtx, p *partition, from, vis uint64, opts QueueOptions, buf *segment.ReadBuffer) ([]segment.Message, uint64, claimResult, error) {
	msgs, cl, err := b.readSpanLocked(pc, p, from, vis, opts.DelayedProcessing, buf)
	if err != nil || len(msgs) == 0 {
		return msgs, from, cl, err
	}
	cutoff := expiryCutoff(opts, pc.nowMicros)
	next, expired := b.skipExpiredLocked(p, cutoff, msgs, vis)
	if !expired {
		return msgs, from, cl, nil
	}
	if from = max(from, next); from >= vis {
		return nil, from, claimResult{verdict: ready.Done}, nil
	}
	msgs, cl, err = b.readSpanLocked(pc, p, from, vis, opts.DelayedProcessing, buf)
	if again, ok := b.expiredAgainLocked(p, cutoff, msgs, vis); ok && err == nil {
		return nil, from, again, nil
	}
	return msgs, from, cl, err
}

// expiryCutoff returns the creation time (µs) before which o's messages are
// expired at nowMicros: the shorter of retentionSeconds (when
// retentionEnabled) and maxWaitTimeSeconds (whatever retentionEnabled says,
// as Queen's eviction), or 0 when neither rule is set.
// completedRetentionSeconds deletes only consumed messages and so never
// hides one from a pop.
func expiryCutoff(o QueueOptions, nowMicros int64) int64 {
	h := o.MaxWaitTimeSeconds
	if o.RetentionEnabled && o.RetentionSeconds > 0 && (h <= 0 || o.RetentionSeconds < h) {
		h = o.RetentionSeconds
	}
	if h <= 0 {
		return 0
	}
	return nowMicros - h*1_000_000
}

// liveFrom is p's logical low-water mark: the first offset a reader may
// still see, past both whole-file retention and read-time expiry.
func (p *partition) liveFrom() uint64 {
	return max(p.log.FirstOffset(), p.expiredBelow.Load())
}

// raiseExpired raises p.expiredBelow to off unless it is already there.
func (p *partition) raiseExpired(off uint64) {
	for {
		cur := p.expiredBelow.Load()
		if off <= cur || p.expiredBelow.CompareAndSwap(cur, off) {
			return
		}
	}
}

// expireTo finds, with the segment time index, the first offset of p
// stamped at or after cutoff, capped at the visible end vis, raises p's mark
// to it and returns the new liveFrom; ok is false when the index could not
// be read (segment.Log.OffsetAtOrAfterTime then answers the end of the log
// although its newest segment is not expired) and nothing was raised. The
// caller holds p.mu or accepts that the lookup may open a sealed file's
// index.
func (b *Broker) expireTo(p *partition, cutoff int64, vis uint64) (live uint64, ok bool) {
	lookup := p.log.OffsetAtOrAfterTime
	if h := b.hooks.timeLookup; h != nil {
		lookup = func(ts int64) uint64 { return h(p, ts) }
	}
	off := lookup(cutoff)
	if off >= p.log.NextOffset() && p.log.LastTimestamp() >= cutoff {
		return p.liveFrom(), false // never hide a live message on an I/O error
	}
	p.raiseExpired(min(off, vis))
	b.refreshPending(p)
	return p.liveFrom(), true
}

// skipExpiredLocked is called by a claim with what it read (non-empty): when
// the first message is expired under cutoff (0: no rule) it raises p's mark
// past the expired messages and reports where reading resumes: the first
// unexpired offset, or vis when every visible message is expired. Should
// the time index fail, it skips only what msgs shows expired, so what the
// claim reads next may start expired again (see expiredAgainLocked).
// The caller holds p.mu.
func (b *Broker) skipExpiredLocked(p *partition, cutoff int64, msgs []segment.Message, vis uint64) (uint64, bool) {
	if cutoff == 0 || msgs[0].TimestampMicros >= cutoff {
		return 0, false
	}
	if live, ok := b.expireTo(p, cutoff, vis); ok {
		return live, true
	}
	return b.skipExpiredPrefix(p, cutoff, msgs, vis), true
}

// skipExpiredPrefix raises p's mark past the messages of msgs (read in
// order, non-empty) stamped before cutoff and returns the new liveFrom.
func (b *Broker) skipExpiredPrefix(p *partition, cutoff int64, msgs []segment.Message, vis uint64) uint64 {
	i := sort.Search(len(msgs), func(i int) bool { return msgs[i].TimestampMicros >= cutoff })
	off := msgs[len(msgs)-1].Offset + 1
	if i < len(msgs) {
		off = msgs[i].Offset
	}
	p.raiseExpired(min(off, vis))
	b.refreshPending(p)
	return p.liveFrom()
}

// expiredAgainLocked is for a claim whose second read, after a skip, still
// starts with an expired message (only after a time-index failure): it
// skips those too and tells the claim to deliver nothing from p in this
// pop but keep it ready; the next pop reads on from the raised mark.
// The caller holds p.mu.
func (b *Broker) expiredAgainLocked(p *partition, cutoff int64, msgs []segment.Message, vis uint64) (claimResult, bool) {
	if len(msgs) == 0 || cutoff == 0 || msgs[0].TimestampMicros >= cutoff {
		return claimResult{}, false
	}
	b.skipExpiredPrefix(p, cutoff, msgs, vis)
	return claimResult{verdict: ready.Again, key: msgs[0].TimestampMicros}, true
}

// raiseCursorTo moves st's cursor up so that a claim starting at from
// grants its lease from there (lease.Grant starts at Committed+1): the
// offsets below it are expired or removed and will never be delivered. A
// remembered (expired or released) span wholly below from is forgotten with
// its retry charge, as raiseCursorsLocked does for whole-file retention. It
// reports whether st changed; the caller has checked that no lease is live.
func raiseCursorTo(st *lease.State, from uint64) bool {
	if from <= st.Committed+1 {
		return false
	}
	st.Committed = from - 1
	if st.Lease.End < from {
		st.Lease = lease.Lease{}
		st.Retries = 0
	}
	return true
}
