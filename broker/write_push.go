package broker

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/names"
	"github.com/combmq/comb/segment"
)

// pushGroup is the items of one request bound for one partition.
type pushGroup struct {
	p      *partition
	idxs   []int // item indexes, in request order
	recs   []segment.Record
	first  uint64 // first offset appended (0 = nothing appended)
	next   uint64 // offset after the last appended
	ts     int64
	ticket walTicket // its commit-log entry (zero = nothing appended)
	// exposed: pops may claim what it appended before its commit
	// (write_early.go); announced at once, published without a hold.
	exposed bool
	// dupWait is what its duplicates' answers wait for (findStored; nil =
	// nothing), dupNext the offset after the last record they name.
	dupWait walTicket
	dupNext uint64
}

// entryBufs recycles the buffers a push builds its commit-log entries in (partition id +
// segment, ~20 KB for 100 messages of 200 B): the commit log copies an entry on Append, so
// the buffer is free again at once, and a request no longer allocates one per partition.
var entryBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledEntry keeps one huge push from pinning its buffer in the pool.
const maxPooledEntry = 1 << 20

// recBufs recycles a group's []segment.Record (~13 KB for 100 messages, a Record is 130
// bytes): the segment log encodes the records into its own buffer on Append and keeps none of
// them, so the slice is free once the request has counted them. Zeroed before it is pooled,
// so it pins no payload.
var recBufs = sync.Pool{New: func() any { return new([]segment.Record) }}

// maxPooledRecs keeps one huge push from pinning its slice in the pool.
const maxPooledRecs = 4096

func getRecs(n int) []segment.Record {
	p := recBufs.Get().(*[]segment.Record)
	if cap(*p) < n {
		return make([]segment.Record, 0, max(n, 128))
	}
	return (*p)[:0]
}

// putRecs pools the groups' record slices (Push, once nothing reads them).
func putRecs(groups []*pushGroup) {
	for _, g := range groups {
		if g.recs == nil || cap(g.recs) > maxPooledRecs {
			continue
		}
		r := g.recs[:cap(g.recs)]
		clear(r)
		r = r[:0]
		g.recs = nil
		recBufs.Put(&r)
	}
}

// Push stores items (spec 1): one segment per (queue, partition) with one
// timestamp for the whole request, so all its messages share createdAt; ids
// are UUIDv7 in item order; a (partition, transactionId) already stored, or
// repeated earlier in the request, is answered `duplicate` with the existing
// message's id (spec 1.4). Queues and partitions are created on first use.
//
// Durability: each partition's segment is written to its file (page cache)
// and to the commit log; Push returns only after its commit-log entries are
// durable (with Sync "always" the messages survive a crash: one fdatasync
// shared by every request of the group), and only then are the messages
// visible (listed, counted, published). Pops may claim them, and parked
// long-polls are woken, as soon as the entry is appended, but a pop answers
// only once the entry is durable, and fails, claiming nothing, if it never
// is (write_early.go, issue 23). A `duplicate` of a record
// whose own push is still waiting for its commit waits for that commit too
// (write_durable.go, issue 21). The partition files are synced later by the
// flush pass (flush.go).
//
// While push maintenance is on (meta_maint.go, spec 1.8) the messages are
// stored and synced the same way but stay hidden from pops, and their items
// answer `buffered` with the client's transactionId ("" when none was sent).
//
// Errors: ErrBadRequest (names, transactionId over 255 bytes; nothing stored),
// ErrClosed, or a storage error (HTTP 500; a retry is safe thanks to dedup).
func (b *Broker) Push(items []PushItem) ([]PushResult, error) {
	return b.PushInto(nil, items)
}

// PushInto is Push with the results written into dst's memory (dst[:0],
// zeroed; a new slice when its capacity is short of len(items), or dst is
// nil): the push handler passes the slice of its previous request, so the
// results of 100 items (~12 KB) are not allocated on every request. Neither
// items nor dst is kept once PushInto returns. On an error the result is nil.
func (b *Broker) PushInto(dst []PushResult, items []PushItem) ([]PushResult, error) {
	if err := b.enterWrite(); err != nil {
		return nil, err
	}
	defer b.leave()
	if err := validatePushItems(items); err != nil {
		return nil, err
	}
	var results []PushResult
	if dst != nil && cap(dst) >= len(items) {
		results = dst[:len(items)]
		clear(results)
	} else {
		results = make([]PushResult, len(items))
	}
	if len(items) == 0 {
		return results, nil
	}
	b.stats.pushRequests.Add(1)
	groups, err := b.groupPush(items)
	if err != nil {
		return nil, err
	}
	defer putRecs(groups)
	for _, g := range groups {
		if err := g.p.damagedErr(); err != nil {
			return nil, err // before anything is appended anywhere
		}
	}
	b.checkMaxSize(items, groups, results)

	ts := b.now().UnixMicro()
	var ids idSeq
	for _, g := range groups {
		if err := b.appendGroup(g, items, results, ts, &ids); err != nil {
			return nil, err
		}
		if g.exposed {
			// Before the commit: a parked pop claims while it syncs
			// (write_early.go).
			b.announce(g.p, g.ts)
		}
	}
	if err := b.waitGroups(groups); err != nil {
		return nil, err
	}
	var n uint64
	var holdErr error
	for _, g := range groups {
		n += uint64(len(g.recs))
		g.p.q.an.Ingested(len(g.recs))
		next := max(g.next, g.dupNext)
		if next == 0 {
			continue // only duplicates of published records: nothing new to show
		}
		if g.exposed {
			// Announced already, and perhaps claimed: never held (spec 1.8
			// maintenance began after it appended).
			b.raiseVisible(g.p, next)
			continue
		}
		held, err := b.publishOrHold(g.p, next, g.ts)
		if held {
			markBuffered(g, items, results)
		}
		holdErr = errors.Join(holdErr, err)
	}
	b.stats.pushMessages.Add(n)
	if holdErr != nil {
		return nil, holdErr // stored and durable; a retry answers duplicate
	}
	return results, nil
}

func validatePushItems(items []PushItem) error {
	for i := range items {
		it := &items[i]
		if err := nameErr(names.Queue, it.Queue); err != nil {
			return err
		}
		if it.Partition != "" {
			if err := nameErr(names.Partition, it.Partition); err != nil {
				return err
			}
		}
		if err := txidErr(it.TransactionID); err != nil {
			return err
		}
	}
	return nil
}

// groupPush splits items by (queue, partition), creating what is missing.
func (b *Broker) groupPush(items []PushItem) ([]*pushGroup, error) {
	keys := make([]partKey, 0, 1)
	index := make(map[partKey]int, 1)
	itemKey := make([]int, len(items))
	var last partKey // the previous item's: a request's items mostly share one
	lastJ := -1
	for i := range items {
		k := partKey{items[i].Queue, items[i].Partition}
		if k.partition == "" {
			k.partition = DefaultPartition
		}
		if lastJ >= 0 && k == last {
			itemKey[i] = lastJ
			continue
		}
		j, ok := index[k]
		last, lastJ = k, j
		if !ok {
			j = len(keys)
			index[k] = j
			keys = append(keys, k)
			lastJ = j
		}
		itemKey[i] = j
	}
	parts, err := b.ensurePartitions(keys)
	if err != nil {
		return nil, err
	}
	groups := make([]*pushGroup, len(keys))
	for j := range keys {
		groups[j] = &pushGroup{p: parts[j]}
	}
	// Every group's item indexes in one array, each group a window of it sized
	// by its count: appending from nil grew a 100-item group through 8
	// allocations.
	counts := make([]int, len(keys))
	for _, j := range itemKey {
		counts[j]++
	}
	all := make([]int, len(items))
	at := 0
	for j, n := range counts {
		groups[j].idxs = all[at : at : at+n]
		at += n
	}
	for i, j := range itemKey {
		groups[j].idxs = append(groups[j].idxs, i)
	}
	return groups, nil
}

// appendGroup dedups and appends one partition's items as one segment under
// the partition lock. Items already failed (maxSize) are skipped.
func (b *Broker) appendGroup(g *pushGroup, items []PushItem, results []PushResult, ts int64, ids *idSeq) error {
	p := g.p
	var texts *idTexts // the message ids' strings
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		for _, i := range g.idxs {
			results[i] = PushResult{Status: PushFailed, TransactionID: items[i].TransactionID, Queue: items[i].Queue,
				Partition: p.name, Error: "Queue was deleted"}
		}
		return nil
	}
	if g.recs == nil {
		g.recs = getRecs(len(g.idxs)) // sized once: a Record is 100+ bytes
	}
	g.recs = g.recs[:0]
	if err := p.damagedErr(); err != nil {
		return err
	}
	if err := b.ensurePartitionDir(p); err != nil {
		return err
	}
	if err := b.growSmall(p); err != nil {
		return b.noSpace(fmt.Sprintf("queue %s partition %s: its directory", p.q.name, p.name), err)
	}
	tb := txidBufs.Get().(*txidBuf)
	defer putTxids(tb)
	txids, hashes := groupTxids(tb, g.idxs, items, results)
	stored, wait, err := b.findStored(p, txids, hashes)
	if err != nil {
		return b.storageErr(p, err)
	}
	tb.resetSeen(len(g.idxs))
	for k, i := range g.idxs {
		it := &items[i]
		if results[i].Status == PushFailed {
			continue
		}
		r := &results[i]
		r.Queue, r.Partition, r.PartitionID, r.TraceID = it.Queue, p.name, p.idStr, it.TraceID
		if it.TransactionID != "" {
			if first := tb.seenAt(hashes[k], it.TransactionID); first >= 0 {
				r.Status, r.TransactionID, r.MessageID = PushDuplicate, it.TransactionID, results[g.idxs[first]].MessageID
				continue
			}
			if stored != nil && stored[k].ok {
				r.Status, r.TransactionID, r.MessageID = PushDuplicate, it.TransactionID, uuidString(stored[k].id)
				if wait.Appended() {
					g.dupWait, g.dupNext = wait, max(g.dupNext, stored[k].off+1)
				}
				continue
			}
		}
		id, err := ids.id()
		if err != nil {
			return fmt.Errorf("message id: %w", err)
		}
		if texts == nil {
			texts = newIDTexts(len(g.idxs))
		}
		idStr := texts.str(id)
		txid := it.TransactionID
		if txid == "" {
			// spec 1.4: a generated unique id; the message id is one.
			txid = idStr
		}
		if it.TransactionID != "" { // generated ids are unique: never looked up
			tb.addSeen(hashes[k], k)
		}
		r.Status, r.TransactionID, r.MessageID = PushQueued, txid, idStr
		payload := it.Payload
		if payload == nil {
			payload = nullJSON
		}
		payload, err = b.storedPayload(p.q, payload) // spec 9.2: sealed before anything is written
		if err != nil {
			return err
		}
		var h uint64 // a generated id was not looked up: Append hashes it
		if it.TransactionID != "" {
			h = hashes[k]
		}
		g.recs = append(g.recs, segment.Record{ID: id, TransactionID: txid, TraceID: it.TraceID, ProducerSub: it.ProducerSub,
			Payload: payload, TxHash: h})
	}
	// Timestamps of a partition never go backwards, even when a concurrent
	// request that read the clock later appended first.
	g.ts = max(ts, p.log.LastTimestamp())
	if len(g.recs) == 0 {
		return nil // duplicates only: they wait for dupWait (findStored)
	}
	bp := entryBufs.Get().(*[]byte)
	first, err := b.appendLogged(p, g.ts, g.recs, bp, &g.ticket)
	if cap(*bp) <= maxPooledEntry {
		entryBufs.Put(bp)
	}
	if err != nil {
		return err
	}
	g.first, g.next = first, first+uint64(len(g.recs))
	g.exposed = b.exposeLocked(p, g.next)
	return nil
}

// appendLogged appends recs to p's log as one segment and the same segment to
// the commit log (walPush), under p's lock: the file first (a failure there
// is cut back and leaves nothing), then the entry. The caller waits for
// *ticket before it publishes. *entry is a reusable buffer, free again on
// return (the commit log copies what it is given).
//
// The commit log refuses an entry only when it cannot get space (a full
// disk, commitlog.ErrNoSpace): the segment is then taken back out of the
// file (segment.Log.Unappend), so the file holds nothing no entry covers,
// the partition keeps serving, and a retry once space is freed appends the
// records again, exactly once (issue 21: a full disk is a state, never
// damage). Only when that cut fails is the partition taken out of service
// until a restart (which cuts what no durable entry covers).
//
// Errors: ErrNoSpace (wrapped, naming the file or the commit log), the
// segment log's or the commit log's other errors.
func (b *Broker) appendLogged(p *partition, ts int64, recs []segment.Record, entry *[]byte, ticket *walTicket) (uint64, error) {
	buf := append((*entry)[:0], p.id[:]...)
	first, buf, err := p.log.AppendTo(buf, ts, recs)
	*entry = buf
	if err != nil {
		err = fmt.Errorf("queue %s partition %s: append: %w", p.q.name, p.name, err)
		return 0, b.noSpace(fmt.Sprintf("queue %s partition %s: its segment file", p.q.name, p.name), b.storageErr(p, err))
	}
	// Marked before the entry exists: a flush pass that finds the entry
	// durable (and truncates it) finds the log marked, and syncs it. Marked
	// after it, a pass could take the marks in between and drop the entry
	// with the file unsynced (issue 21).
	b.committer.Mark(p.log)
	t, err := b.wal.Append(walPush, buf)
	if err != nil && b.cfg.Replicated != nil && (retryable(err) || b.isStale()) {
		// Leadership lost since enterWrite: the node is stale and restarts, which cuts the
		// segment (it is past the partition's committed offset, follow_commit.go); nothing
		// is published, so the partition stays in service meanwhile, and
		// a duplicate of the segment fails as this push does.
		err = fmt.Errorf("broker: queue %s partition %s: %w", p.q.name, p.name, err)
		p.tail = failedTicket(err)
		return 0, err
	}
	if err != nil {
		err = fmt.Errorf("broker: queue %s partition %s: commit log: %w", p.q.name, p.name, err)
		if uerr := p.log.Unappend(first); uerr != nil {
			p.tail = failedTicket(err)
			b.markDamaged(p, &segment.CorruptionError{File: p.log.Dir(), FirstOffset: first, LastOffset: first + uint64(len(recs)) - 1,
				Reason: "appended while the commit log refused its entry (" + err.Error() + ") and could not be cut back (" + uerr.Error() + "); restart the server to cut it"})
			return 0, err
		}
		// Taken back: p.tail still covers every record left in the file.
		return 0, b.noSpace("the commit log", err)
	}
	tail := t
	if h := b.hooks.pushCommit; h != nil {
		t, tail = h(t)
	}
	*ticket = t
	p.tail = later(p.tail, tail)
	b.wroteOK()
	return first, nil
}

var nullJSON = []byte("null")

// groupTxids are the transactionIds of one partition's items for findStored
// (txids[k] of items[idxs[k]], "" for a failed item or none sent) and their
// hashes, which the append reuses (index.HashTxn, 0 for none), in t's
// buffers (txidBufs: the lookup and the append keep neither slice).
func groupTxids(t *txidBuf, idxs []int, items []PushItem, results []PushResult) ([]string, []uint64) {
	if cap(t.txids) < len(idxs) {
		t.txids, t.hashes = make([]string, len(idxs), max(len(idxs), 128)), make([]uint64, len(idxs), max(len(idxs), 128))
	}
	txids, hashes := t.txids[:len(idxs)], t.hashes[:len(idxs)]
	t.txids, t.hashes = txids, hashes // seenAt reads them
	for k, i := range idxs {
		txids[k], hashes[k] = "", 0
		if results[i].Status != PushFailed && items[i].TransactionID != "" {
			txids[k] = items[i].TransactionID
			hashes[k] = index.HashTxn(txids[k])
		}
	}
	return txids, hashes
}

// txidBuf is groupTxids' pair of slices, pooled in txidBufs, and the set of
// the group's transactionIds queued so far (a repeat within the request is a
// duplicate of its first occurrence, spec 1.4).
type txidBuf struct {
	txids  []string
	hashes []uint64
	// seen is an open-addressing table over txids keyed by hashes: k+1 of a
	// queued item, 0 for an empty slot; at least twice as many slots as
	// items, so a probe always ends. It replaced a map[string]int made per
	// push (~3 KB and a string hash per item, the hashes being at hand).
	seen []int32
}

// resetSeen empties the set for a group of n items.
func (t *txidBuf) resetSeen(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(t.seen) < size {
		t.seen = make([]int32, size)
		return
	}
	t.seen = t.seen[:size]
	clear(t.seen)
}

// seenAt is the position k of the group's queued item with transactionId tx
// (hash h), or -1 when none was queued yet.
func (t *txidBuf) seenAt(h uint64, tx string) int {
	mask := uint64(len(t.seen) - 1)
	for pos := h & mask; ; pos = (pos + 1) & mask {
		s := t.seen[pos]
		if s == 0 {
			return -1
		}
		if k := int(s - 1); t.hashes[k] == h && t.txids[k] == tx {
			return k
		}
	}
}

// addSeen records the item at position k (not in the set yet).
func (t *txidBuf) addSeen(h uint64, k int) {
	mask := uint64(len(t.seen) - 1)
	for pos := h & mask; ; pos = (pos + 1) & mask {
		if t.seen[pos] == 0 {
			t.seen[pos] = int32(k + 1)
			return
		}
	}
}

var txidBufs = sync.Pool{New: func() any { return new(txidBuf) }}

// putTxids zeroes t (it pins no client string) and pools it unless it grew huge.
func putTxids(t *txidBuf) {
	if cap(t.txids) > maxPooledRecs {
		return
	}
	clear(t.txids[:cap(t.txids)])
	txidBufs.Put(t)
}

// waitGroups waits until the commit-log entries of every group, and those
// its duplicates name, are durable: one wait, for the last of them (entries
// become durable in order).
func (b *Broker) waitGroups(groups []*pushGroup) error {
	ts := make([]walTicket, 0, 2*len(groups))
	for _, g := range groups {
		ts = append(ts, g.ticket, g.dupWait)
	}
	if err := waitLast(ts); err != nil {
		return fmt.Errorf("broker: commit log: %w", err)
	}
	return nil
}

// publishOrHold publishes p up to next, or holds it while push maintenance
// is on. held reports the latter. The first hold of a partition rewrites the
// maintenance file (its published mark) before returning; err is that
// write's failure (the messages stay held in memory and durable in the log).
func (b *Broker) publishOrHold(p *partition, next uint64, ts int64) (held bool, err error) {
	b.mm.mu.RLock()
	if !b.mm.push.Load() {
		b.publish(p, next, ts)
		b.mm.mu.RUnlock()
		return false, nil
	}
	b.mm.mu.RUnlock()
	b.mm.mu.Lock()
	defer b.mm.mu.Unlock()
	if !b.mm.push.Load() {
		b.publish(p, next, ts)
		return false, nil
	}
	prev, was := b.mm.held[p]
	if b.mm.held == nil {
		b.mm.held = make(map[*partition]uint64)
	}
	b.mm.held[p] = max(prev, next)
	if !was {
		return true, b.writeMaintLocked(true, b.mm.pop.Load())
	}
	return true, nil
}

// publish makes offsets below next visible to pops, tells the queue's group
// ready structures and wakes parked long-polls (spec 1.4 "Wake-up").
func (b *Broker) publish(p *partition, next uint64, ts int64) {
	b.raiseVisible(p, next)
	b.announce(p, ts)
}

// checkMaxSize fails every item of a queue whose pending depth (messages after
// the __QUEUE_MODE__ cursor) would pass maxSize (spec 1.7). The depth is the
// queue's running counter (pending.go), so the check costs one atomic load;
// concurrent pushes may each pass it and together overshoot by one batch.
func (b *Broker) checkMaxSize(items []PushItem, groups []*pushGroup, results []PushResult) {
	perQueue := make(map[*queue]int64)
	for _, g := range groups {
		if g.p.q.options().MaxSize > 0 {
			perQueue[g.p.q] += int64(len(g.idxs))
		}
	}
	for q, n := range perQueue {
		max := q.options().MaxSize
		depth := q.pendingQM.Load()
		if depth+n <= max {
			continue
		}
		msg := fmt.Sprintf("Queue '%s' would exceed max capacity (%d). Current: %d, Batch: %d", q.name, max, depth, n)
		for _, g := range groups {
			if g.p.q != q {
				continue
			}
			for _, i := range g.idxs {
				results[i] = PushResult{Status: PushFailed, TransactionID: items[i].TransactionID, Queue: q.name,
					Partition: g.p.name, Error: msg}
			}
		}
	}
}

// markBuffered turns the queued items of a held group into `buffered` ones
// (spec 1.8): queue, partition and the client's own transactionId only.
func markBuffered(g *pushGroup, items []PushItem, results []PushResult) {
	for _, i := range g.idxs {
		if results[i].Status == PushQueued {
			results[i] = PushResult{Status: PushBuffered, TransactionID: items[i].TransactionID,
				Queue: items[i].Queue, Partition: g.p.name}
		}
	}
}

// idTexts writes the UUID strings of one request's message ids into one buffer (a push of 100
// messages made 100 allocations of 36 bytes for them). Strings handed out stay valid: a
// strings.Builder never rewrites what it holds, and Grow sized it for every id.
type idTexts struct{ sb strings.Builder }

func newIDTexts(n int) *idTexts {
	t := &idTexts{}
	t.sb.Grow(36 * n)
	return t
}

// str returns id in the canonical 8-4-4-4-12 form, as uuidString.
func (t *idTexts) str(id [16]byte) string {
	var b [36]byte
	start := t.sb.Len()
	t.sb.Write(appendUUID(b[:0], id))
	return t.sb.String()[start:]
}
