package broker

import (
	"context"
	"errors"
	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/smallfs"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/broker/wake"
	"github.com/combmq/comb/clock"
	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
	"github.com/rs/zerolog"
)

// Broker ties the segment logs, the cursor engine and the lease rules
// together (see doc.go). All methods are safe for concurrent use.
type Broker struct {
	syncHist syncHist // cumulative sync latencies for Stats
	ckptHist syncHist // cursor checkpoint latencies, append to durable (write_wal.go cursorLog)
	// commitHist: on a replicated node, every waited entry from its append
	// to committed on a quorum and applied here (write_replica.go).
	commitHist syncHist
	// readyTerm is the leader term (ReplicatedLog.LeaderTerms) whose ready
	// structures rebuildReady built; readyMu makes one pop build them.
	readyTerm atomic.Uint64
	readyMu   sync.Mutex
	cfg       Config
	log       zerolog.Logger
	now       func() time.Time
	waits     clock.Clock // the long-poll's deadlines and timers: Config.Clock, else clock.System (Config.Now sets readings only)
	dir       string
	syncMode  commitlog.SyncPolicy
	segOpts   segment.Options
	lockFile  io.Closer     // the LOCK (vfs.FS.Lock: flock on a real disk)
	fs        vfs.FS        // under the metadata journal and the segment logs (Config.FS)
	wal       commitLog     // the commit log (write_wal.go): everything durable goes through it
	claimed   claimedBudget // bytes of the leased spans' transaction ids kept for acks (ack_claimed.go)
	walScan   walScan       // what Open's first read of the commit log found (open.go); empty after Open
	// walFailSince is when CheckpointFailure first saw the commit log fail (µs; 0 = it does not).
	walFailSince atomic.Int64
	// noSpaceSince is when writes started failing for want of disk space
	// (µs; 0 = they do not), noSpaceReason the last such error, noSpaceProbed
	// when spaceBack last tried a write of its own (µs) (nospace.go).
	noSpaceSince  atomic.Int64
	noSpaceReason atomic.Pointer[string]
	noSpaceProbed atomic.Int64
	flush         flushState
	cur           *cursor.Engine
	committer     *segment.Committer
	handles       *segment.HandleCache // bounds open partition files (MaxOpenFiles); nil = unbounded
	// small is the file system seam of small partitions and elog its entry
	// log (broker/small.go); nil when neither Config.SmallPartitions nor
	// <data>/small.
	small *smallfs.FS
	elog  *entrylog.Log

	// summaries are the partition Summaries of the clean-shutdown marker,
	// set during Open only (open_startup.go).
	summaries  map[[16]byte]segment.Summary
	cleanStart bool             // the summaries came from a clean shutdown's marker
	maint      maintenance      // idle eviction and retention (maint_evict.go, maint_retention.go)
	mm         maintMode        // push and pop maintenance modes (meta_maint.go)
	series     *analytics.Store // per-minute series of the dashboard (maint_series.go); nil = counting off

	// metaMu serialises metadata changes (creating, configuring and deleting
	// queues and partitions): each appends its commit-log entry and applies
	// it to the registry under metaMu, so that entries reach the log in the
	// order they take effect and a metadata snapshot (flush.go) taken under
	// it holds every entry appended before; the snapshot's write and fsyncs
	// run after it is let go (snapshotMeta). It is not the registry lock:
	// pushes, pops and acks on existing partitions never wait for it. Lock
	// order: metaMu → mu.
	metaMu sync.Mutex
	// createMu guards creating, the batch of partition creations that the
	// next holder of metaMu makes (write_create.go, createBatched). Lock
	// order: createMu is taken alone, or inside metaMu.
	createMu sync.Mutex
	creating *createBatch
	cpuSat   cpuSaturation // whether the group-commit wait may hold consumers' batches (saturation.go)
	// tombstones are the ids of deleted queues and their partitions (under
	// metaMu): a metadata snapshot keeps them, so that a directory a crash
	// left behind is still known as deleted.
	tombstones map[[16]byte]bool
	described  bool // every directory carries a DESCRIPTOR (meta.KindDescribed); under metaMu
	// mu is the registry lock: the queue and partition maps. The hot paths
	// take it shared; creation and deletion take it exclusively, only to
	// change the maps (never across a sync).
	mu        sync.RWMutex
	queues    map[string]*queue
	parts     map[[16]byte]*partition
	nParts    int
	closed    atomic.Bool
	closing   chan struct{}
	inflight  sync.WaitGroup
	gate      sync.RWMutex // orders enter's Add before Close's Wait (enter)
	closeOnce sync.Once

	wake    *wake.Waker
	anyGate *wake.Gate // signalled by every push: discovery pops park here

	stats counters
	rest  atRest // payload encryption at rest (atrest.go)

	msgNotes msgNotes    // message tombstones and trace events (note_store.go)
	streams  streamState // stream queries and their state (stream_store.go, package streams)
	// hooks are failure points for crash tests (nil in production).
	hooks struct {
		afterTxCommitPoint func() error
		timeLookup         func(p *partition, tsMicros int64) uint64 // replaces the time-index lookup of read_expire.go
		// pushCommit replaces the ticket of a push's commit-log entry
		// (appendLogged) with the one the push waits on (own) and the one
		// it leaves as the partition's tail: tests hold or fail a commit the
		// log itself makes durable (write_early_test.go).
		pushCommit func(t walTicket) (own, tail walTicket)
	}
}

type counters struct {
	pushRequests, pushMessages atomic.Uint64
	popRequests, popMessages   atomic.Uint64
	ackRequests, ackMessages   atomic.Uint64
	ackSuccess, ackFailed      atomic.Uint64
	dlqMessages                atomic.Uint64
	parkedPops                 atomic.Int64
	evictions                  atomic.Uint64 // partitions released by idle eviction
	retentionFiles             atomic.Uint64 // segment files deleted by retention (partitions and DLQs)
	retentionBytes             atomic.Uint64 // their bytes
	retentionCursors           atomic.Uint64 // cursors moved up to a new low-water mark
}

// queueConf is the mutable part of a queue, swapped whole on configure so the
// hot paths read it without a lock.
type queueConf struct {
	namespace, task string
	opts            QueueOptions
}

type queue struct {
	id        [16]byte
	idStr     string
	name      string
	createdAt int64 // µs
	conf      atomic.Pointer[queueConf]
	gate      *wake.Gate

	mu     sync.RWMutex // parts, list, groups
	parts  map[string]*partition
	list   []*partition
	groups map[string]*groupReady

	dlqMu sync.Mutex
	dlq   *segment.Log
	// dlqCommitted is partition.committed for the DLQ log (replicated nodes only).
	dlqCommitted atomic.Uint64

	deleted atomic.Bool

	// an counts the queue's pushes, pops and acks for the per-minute series
	// (maint_series.go); nil (counting off) is a valid no-op.
	an *analytics.Counters

	// pendingQM is the queue's pending depth for maxSize (spec 1.7): messages
	// after the __QUEUE_MODE__ cursor, summed over partitions (pending.go).
	pendingQM atomic.Int64
	// groupNames are the consumer groups with a cursor on some partition of
	// the queue, copy on write (retention needs them; pending.go).
	groupNames atomic.Pointer[map[string]struct{}]
	namesMu    sync.Mutex
}

type partition struct {
	id        [16]byte
	idStr     string
	name      string
	q         *queue
	createdAt int64 // µs
	log       *segment.Log

	// mu is the partition lock: appends, and every read-modify-write of a
	// (partition, group) State. Never held while taking b.mu or q.mu.
	mu      sync.Mutex
	deleted bool // under mu

	// visible is the offset after the last message a pop may see: appended
	// and made durable per the sync policy. Pushes raise it after their group
	// commit, so no pop delivers a message its push has not yet answered.
	visible atomic.Uint64
	// claimable is the offset after the last record a push exposed to pops
	// before its commit (write_early.go): appended to the file with its
	// commit-log entry, not necessarily durable yet. A pop may claim up to
	// claimableEnd, but answers only once the partition's tail (as it read
	// it with the claim) is durable, and then raises visible itself. Raised
	// under mu; 0 until a push exposes something.
	claimable atomic.Uint64
	// expiredBelow is the offset below which messages are past the queue's
	// retentionSeconds or maxWaitTimeSeconds: never delivered nor counted,
	// though their file may remain (read_expire.go). Only rises; in memory.
	expiredBelow atomic.Uint64
	// committed is, on a replicated node, the offset after the last message
	// whose entry the cluster committed (follow_commit.go): a leader writes
	// a segment to its file before the entry commits, and what a restart
	// keeps of the file never passes this. Unused on a single node.
	committed atomic.Uint64

	idleSince int64 // µs the maintenance task first saw the log unused; under b.maint.mu (maint_evict.go)

	sum segment.Summary // last summary checkpoint entry (flush_summaries.go); zero = none

	pendMu    sync.Mutex // guards qmPending (a leaf lock; pending.go)
	qmPending int64      // this partition's share of q.pendingQM

	// damaged is set (once) when the log reported on-disk damage: the
	// partition is out of service (damage.go).
	damaged atomic.Pointer[damage]
	// dirPending: the partition's creation is durable but its directory
	// could not be made (a full disk); the next append makes it
	// (ensurePartitionDir). Changed under mu.
	dirPending atomic.Bool

	// claimed are the transaction ids of the spans groups lease here, for
	// their acks (ack_claimed.go); under mu.
	claimed []*claimedTxids

	// tail is the ticket of the last commit-log entry that appended to log
	// (appendLogged), under mu; zero when none did since Open. Once it is
	// durable, so is every record below log.NextOffset() read in the same
	// hold of mu: what a duplicate of a not yet published record waits for
	// (write_durable.go). After an append whose entry failed it is a
	// failedTicket, which later keeps: whatever puts such a partition back
	// in service without a restart must reset it once the uncovered
	// records are cut.
	tail walTicket
}

func (q *queue) options() QueueOptions { return q.conf.Load().opts }

func (b *Broker) noSync() bool { return b.syncMode == commitlog.SyncNever }

func (b *Broker) newQueue(id [16]byte, name string, createdAt int64, c queueConf) *queue {
	q := &queue{
		id: id, idStr: uuidString(id), name: name, createdAt: createdAt,
		gate:   wake.NewGate(),
		parts:  make(map[string]*partition),
		groups: make(map[string]*groupReady),
	}
	q.conf.Store(&c)
	if b.series != nil {
		q.an = b.series.Counters(id, name)
	}
	return q
}

// addPartitionLocked registers p; the caller holds b.mu exclusively.
func (b *Broker) addPartitionLocked(p *partition) {
	b.parts[p.id] = p
	b.nParts++
	p.q.mu.Lock()
	p.q.parts[p.name] = p
	p.q.list = append(p.q.list, p)
	p.q.mu.Unlock()
}

// lookupQueue returns the live queue named name, or nil.
func (b *Broker) lookupQueue(name string) *queue {
	b.mu.RLock()
	q := b.queues[name]
	b.mu.RUnlock()
	return q
}

func (b *Broker) lookupPartitionByID(id [16]byte) *partition {
	b.mu.RLock()
	p := b.parts[id]
	b.mu.RUnlock()
	return p
}

func (q *queue) partition(name string) *partition {
	q.mu.RLock()
	p := q.parts[name]
	q.mu.RUnlock()
	return p
}

// partitionsSnapshot returns the queue's partitions at this moment.
func (q *queue) partitionsSnapshot() []*partition {
	q.mu.RLock()
	out := append([]*partition(nil), q.list...)
	q.mu.RUnlock()
	return out
}

// enter marks an operation in flight; Close waits for them. The check and
// the Add happen under gate's read lock, which Close takes to set closed:
// no Add can then race Close's Wait on a zero counter (a WaitGroup misuse the
// race detector reports when raft applies an entry to a closing follower).
func (b *Broker) enter() error {
	b.gate.RLock()
	defer b.gate.RUnlock()
	if b.closed.Load() {
		return ErrClosed
	}
	b.inflight.Add(1)
	return nil
}

func (b *Broker) leave() { b.inflight.Done() }

// enterWrite is enter for a request that appends to the commit log: on a
// replicated node that does not lead, ErrNotLeader before anything changes
// (a push would otherwise write its segment, fail its append and take the
// partition out of service). Leadership lost after the check is the
// deposed leader's case (follow_commit.go; docs/replication.md, "A deposed
// leader").
func (b *Broker) enterWrite() error {
	if r := b.cfg.Replicated; r != nil && !r.Leading() {
		return ErrNotLeader
	}
	return b.enter()
}

// enterConsume is enterWrite for the requests that claim, release or move
// leases and cursors (pop, ack, lease extension, seeks, group deletion,
// subscription rewrites, transactions, stream cycles): on a leader still in
// its fencing wait it waits the rest (at most fence(); ctx cancelled or the
// broker closing end the wait with their error). Pushes and queue
// configuration are not fenced: the barrier before the first append already
// holds everything committed.
func (b *Broker) enterConsume(ctx context.Context) error {
	if err := b.enterWrite(); err != nil {
		return err
	}
	if err := b.waitFence(ctx); err != nil {
		b.leave()
		return err
	}
	return nil
}

// sortedQueues returns the live queues sorted by name.
func (b *Broker) sortedQueues() []*queue {
	b.mu.RLock()
	out := make([]*queue, 0, len(b.queues))
	for _, q := range b.queues {
		out = append(out, q)
	}
	b.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// closedErr maps the cursor engine's ErrClosed (a request that raced Close)
// to the broker's.
func (b *Broker) closedErr(err error) error {
	if errors.Is(err, cursor.ErrClosed) {
		return ErrClosed
	}
	return err
}

// queueByID returns the live queue with id, or nil. It scans the registry:
// only the rare paths that hold nothing but an id use it (a transaction's DLQ
// entries, replay).
func (b *Broker) queueByID(id [16]byte) *queue {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, q := range b.queues {
		if q.id == id {
			return q
		}
	}
	return nil
}
