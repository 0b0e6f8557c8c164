package broker

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
	"github.com/rs/zerolog"
)

// Broker ties the segment logs, the cursor engine and the lease rules
// together (see doc.go). All methods are safe for concurrent use.
type Broker struct {
	syncHist syncHist // cumulative sync latencies for Stats
	cfg      Config
	log      zerolog.Logger
	now      func() time.Time
	dir      string
	syncMode segment.SyncPolicy
	segOpts  segment.Options
	lockFile io.Closer // the LOCK (vfs.FS.Lock: flock on a real disk)
	fs       vfs.FS    // under the metadata journal and the segment logs (Config.FS)
	wal      commitLog // the commit log (wal.go): everything durable goes through it
	walScan  walScan   // what Open's first read of the commit log found (open.go); empty after Open
	// walFailSince is when CheckpointFailure first saw the commit log fail (µs; 0 = it does not).
	walFailSince atomic.Int64
	flush        flushState
	cur          *cursor.Engine
	committer    *segment.Committer
	handles      *segment.HandleCache // bounds open partition files (MaxOpenFiles); nil = unbounded

	// summaries are the partition Summaries of the clean-shutdown marker,
	// set during Open only (startup.go).
	summaries  map[[16]byte]segment.Summary
	cleanStart bool         // the summaries came from a clean shutdown's marker
	sums       summaryState // summary checkpoints (summaries.go)
	maint      maintenance  // idle eviction and retention (evict.go, retention.go)
	mm         maintMode    // push and pop maintenance modes (maintmode.go)
	rates      rateSample   // throughput of the resources overview (resources.go)

	// metaMu serialises metadata changes (creating, configuring and deleting
	// queues and partitions): each appends its commit-log entry and applies
	// it to the registry under metaMu, so that entries reach the log in the
	// order they take effect and a metadata snapshot (flush.go) taken under
	// it holds every entry appended before. It is not the registry lock:
	// pushes, pops and acks on existing partitions never wait for it. Lock
	// order: metaMu → mu.
	metaMu sync.Mutex
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
	closeOnce sync.Once

	wake    *waker
	anyGate *wakeGate // signalled by every push: discovery pops park here

	stats counters
	rest  atRest // payload encryption at rest (atrest.go)
	// hooks are failure points for crash tests (nil in production).
	hooks struct {
		afterTxCommitPoint func() error
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
	gate      *wakeGate

	mu     sync.RWMutex // parts, list, groups
	parts  map[string]*partition
	list   []*partition
	groups map[string]*groupReady

	dlqMu sync.Mutex
	dlq   *segment.Log

	deleted atomic.Bool

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

	idleSince int64 // µs the maintenance task first saw the log unused; under b.maint.mu (evict.go)

	sum segment.Summary // last summary checkpoint entry (summaries.go); zero = none

	pendMu    sync.Mutex // guards qmPending (a leaf lock; pending.go)
	qmPending int64      // this partition's share of q.pendingQM

	// damaged is set (once) when the log reported on-disk damage: the
	// partition is out of service (damage.go).
	damaged atomic.Pointer[damage]
}

func (q *queue) options() QueueOptions { return q.conf.Load().opts }

// Open opens (creating if missing) the data directory cfg.DataDir, takes its
// LOCK, replays the metadata journal, opens every partition's segment log and
// the cursor engine, and repairs what a crash left behind: torn tails (in each
// package), cursors past a partition's high-water mark, leases over lost
// messages, and transactions whose redo record is durable but whose pushes
// are missing (see recover.go). Everything repaired is logged.
//
// Errors: ErrLocked when another process holds the directory; otherwise I/O
// or corruption errors from the packages below, wrapped with the path.
func Open(cfg Config) (*Broker, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" {
		return nil, errors.New("broker: Config.DataDir is required")
	}
	policy, err := segment.ParseSyncPolicy(cfg.Sync)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	if err := fsys.MkdirAll(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	lock, err := fsys.Lock(filepath.Join(cfg.DataDir, "LOCK"))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%s: %w (is another comb serving it?)", cfg.DataDir, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b := &Broker{
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Now,
		dir:      cfg.DataDir,
		syncMode: policy,
		// Rotation syncs nothing (DeferRotationSync): the commit log covers
		// a new file's predecessor until the flush pass syncs both, and
		// recovery cuts what no sync covered (segment.OpenFrom).
		segOpts: segment.Options{MaxFileBytes: cfg.MaxSegmentFileSize, MaxFileAge: cfg.MaxSegmentFileAge, Codec: segment.DefaultCodec,
			QuarantineDir: filepath.Join(cfg.DataDir, "quarantine", "partitions"), DeferRotationSync: true},
		lockFile: lock,
		fs:       fsys,
		queues:   make(map[string]*queue),
		parts:    make(map[[16]byte]*partition),
		closing:  make(chan struct{}),
		anyGate:  newWakeGate(),
	}
	b.segOpts.FS = b.fs
	b.segOpts.OnRecover = b.logSegmentRecovery
	if cfg.MaxOpenFiles > 0 {
		b.handles = segment.NewHandleCache(b.fileBudget(cfg.MaxOpenFiles))
		b.segOpts.Handles = b.handles
	}
	if err := b.open(); err != nil {
		b.closeFiles()
		return nil, err
	}
	if err := b.loadMaintMode(); err != nil {
		b.closeFiles()
		return nil, err
	}
	b.wake = newWaker(cfg.WakeTick)
	b.initScale()
	b.startMaintenance()
	b.startFlusher()
	b.warnEncryptionWithoutKey()
	return b, nil
}

func (b *Broker) noSync() bool { return b.syncMode == segment.SyncNever }

// applyMeta rebuilds the registry from the metadata state, opens the logs
// (each with what the commit log and the summaries say it may keep, startup.go)
// and applies the start-up rule to directories the metadata does not name.
func (b *Broker) applyMeta(st *meta.State) error {
	b.tombstones = make(map[[16]byte]bool, len(st.Deleted))
	for id := range st.Deleted {
		b.tombstones[id] = true
	}
	b.described = st.Described
	byID := make(map[[16]byte]*queue, len(st.Queues))
	for _, mq := range st.Queues {
		q := b.newQueue(mq.ID, mq.Name, mq.CreatedAt, queueConf{namespace: mq.Namespace, task: mq.Task, opts: mq.Opts})
		byID[q.id] = q
		b.queues[q.name] = q
	}
	// Open the logs concurrently: many partitions, each a directory scan.
	type opened struct {
		p   *partition
		rep *segment.RecoveryReport
		err error
	}
	results := make([]opened, len(st.Partitions))
	parallelFor(len(st.Partitions), func(i int) {
		mp := st.Partitions[i]
		p, rep, err := b.openPartition(byID[mp.QueueID], mp.ID, mp.Name, mp.CreatedAt)
		results[i] = opened{p, rep, err}
	})
	for _, o := range results {
		if o.err != nil {
			return o.err
		}
		if o.rep.Repaired() {
			b.log.Warn().Str("queue", o.p.q.name).Str("partition", o.p.name).Str("partitionId", o.p.idStr).
				Int64("truncatedBytes", o.rep.TruncatedBytes).Uint64("lostFirst", o.rep.LostFirstOffset).
				Uint64("lostLast", o.rep.LostLastOffset).Str("tail", o.rep.TailText()).Str("keptAt", o.rep.KeptAt).
				Strs("indexesRebuilt", o.rep.IndexesRebuilt).
				Msg("partition log repaired")
		}
		b.addPartitionLocked(o.p)
	}
	return b.checkStrayDirs(st)
}

func (b *Broker) newQueue(id [16]byte, name string, createdAt int64, c queueConf) *queue {
	q := &queue{
		id: id, idStr: uuidString(id), name: name, createdAt: createdAt,
		gate:   newWakeGate(),
		parts:  make(map[string]*partition),
		groups: make(map[string]*groupReady),
	}
	q.conf.Store(&c)
	return q
}

func (b *Broker) openPartition(q *queue, id [16]byte, name string, createdAt int64) (*partition, *segment.RecoveryReport, error) {
	idStr := uuidString(id)
	dir := filepath.Join(b.dir, "partitions", idStr)
	l, rep, err := b.openPartitionLog(id, dir)
	var ce *segment.CorruptionError
	if errors.As(err, &ce) {
		// One damaged partition must not keep the server down: it is opened
		// out of service (damage.go) on a log that reads nothing until used,
		// and every path that would use it checks the mark first.
		p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: segment.OpenSummary(dir, b.segOpts, segment.Summary{})}
		p.visible.Store(p.log.NextOffset())
		b.markDamaged(p, err)
		return p, &segment.RecoveryReport{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("broker: queue %s partition %s (%s): %w", q.name, name, idStr, err)
	}
	p := &partition{id: id, idStr: idStr, name: name, q: q, createdAt: createdAt, log: l}
	p.visible.Store(l.NextOffset())
	return p, rep, nil
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

// partKey names a (queue, partition) a push or transaction targets.
type partKey struct{ queue, partition string }

// ensurePartitions returns the partitions for keys, creating missing queues
// (labels from the name, default options; spec 1.3) and partitions
// (create.go). Existing partitions cost one shared registry lookup.
func (b *Broker) ensurePartitions(keys []partKey) ([]*partition, error) {
	if out, missing := b.lookupPartitions(keys); !missing {
		return out, nil
	}
	b.metaMu.Lock()
	defer b.metaMu.Unlock()
	// Another request may have made them while this one waited.
	out, missing := b.lookupPartitions(keys)
	if !missing {
		return out, nil
	}
	return b.createPartitionsLocked(keys, out)
}

// lookupPartitions resolves keys to live partitions; missing says whether
// some are not there.
func (b *Broker) lookupPartitions(keys []partKey) (out []*partition, missing bool) {
	out = make([]*partition, len(keys))
	b.mu.RLock()
	defer b.mu.RUnlock()
	for i, k := range keys {
		if q := b.queues[k.queue]; q != nil {
			out[i] = q.partition(k.partition)
		}
		if out[i] == nil {
			missing = true
		}
	}
	return out, missing
}

// enter marks an operation in flight; Close waits for them.
func (b *Broker) enter() error {
	b.inflight.Add(1)
	if b.closed.Load() {
		b.inflight.Done()
		return ErrClosed
	}
	return nil
}

func (b *Broker) leave() { b.inflight.Done() }

// Healthy reports whether the broker is open and its journals accept writes:
// false once closed, or once the cursor journal is unusable until a restart
// (a failed fdatasync; see CheckpointFailure). A full disk is not unhealthy
// but degraded: the broker answers 5xx to what it cannot make durable and
// recovers by itself once space is freed.
func (b *Broker) Healthy() bool {
	if b.closed.Load() || b.cur == nil {
		return false
	}
	f, failing := b.CheckpointFailure()
	return !failing || !f.Sticky
}

// CheckpointFailure is why consumption cannot be made durable right now (GET
// /health reports it).
type CheckpointFailure struct {
	// Reason is the cursor journal's error, e.g. "cursor checkpoint failed
	// (retrying): cursor journal <path>: preallocate bytes 65536..131072: write
	// <path>: no space left on device".
	Reason      string
	SinceMicros int64 // when checkpoints started failing
	// Sticky: a journal fdatasync failed; only a restart brings consumption
	// back (Healthy is false). Otherwise the broker retries by itself.
	Sticky bool
}

// CheckpointFailure reports whether cursor checkpoints are failing now (from a
// failed checkpoint until the next good one): pops, acks, lease extensions,
// seeks and transactions answer 5xx meanwhile and claim nothing.
func (b *Broker) CheckpointFailure() (CheckpointFailure, bool) {
	if b.cur == nil {
		return CheckpointFailure{}, false
	}
	if err := b.wal.Err(); err != nil {
		since := b.walFailSince.Load()
		if since == 0 {
			b.walFailSince.CompareAndSwap(0, b.now().UnixMicro())
			since = b.walFailSince.Load()
		}
		return CheckpointFailure{Reason: "commit log: " + err.Error(), SinceMicros: since,
			Sticky: errors.Is(err, commitlog.ErrFailed)}, true
	}
	b.walFailSince.Store(0)
	f, failing := b.cur.Failure()
	if !failing {
		return CheckpointFailure{}, false
	}
	return CheckpointFailure{Reason: f.Err.Error(), SinceMicros: f.Since.UnixMicro(), Sticky: f.Sticky}, true
}

// Close answers parked long-polls with no messages, waits for operations in
// flight, writes a final cursor checkpoint, syncs and closes every log and
// releases the LOCK. What survives: everything acknowledged before Close, and
// with Sync "interval" or "never" everything appended before it too.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		close(b.closing)
		b.stopMaintenance()
		b.inflight.Wait()
		b.wake.close()
		err = b.closeFiles()
	})
	return err
}

func (b *Broker) closeFiles() error {
	var errs []error
	b.stopFlusher()
	if b.wal != nil && b.cur != nil && b.wake != nil {
		// Everything durable outside the commit log, so the next start
		// replays (almost) nothing. Without it (a failed log, a full disk)
		// no clean marker is written: the next start recovers from the log.
		if err := b.flushPass(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.cur != nil {
		if err := b.cur.Close(); err != nil && !errors.Is(err, cursor.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if b.wal != nil {
		if err := b.wal.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.committer != nil {
		if err := b.committer.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	b.mu.Lock()
	sums := make(map[[16]byte]segment.Summary, len(b.parts))
	for _, p := range b.parts {
		if !b.noSync() {
			if err := p.log.Sync(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := p.log.Close(); err != nil {
			errs = append(errs, err)
		}
		if !p.isDamaged() {
			// A damaged partition gets no summary: the next start opens it
			// in full and finds out again whether it is sound.
			sums[p.id] = p.log.Summary()
		}
	}
	for _, q := range b.queues {
		q.dlqMu.Lock()
		if q.dlq != nil {
			if err := q.dlq.Close(); err != nil {
				errs = append(errs, err)
			}
			q.dlq = nil
		}
		q.dlqMu.Unlock()
	}
	b.mu.Unlock()
	if b.wake != nil && len(errs) == 0 {
		// Only a Close that synced and closed everything may promise it.
		if err := b.writeCleanMarker(sums); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.lockFile.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
