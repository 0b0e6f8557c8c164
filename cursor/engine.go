package cursor

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/vfs"
)

// DefaultCheckpointInterval is the longest a change waits in memory before a
// checkpoint writes it (seed 004: "at least every 5 ms").
const DefaultCheckpointInterval = 5 * time.Millisecond

// DefaultSnapshotAfterBytes is the journal size past which a snapshot is taken
// and a new journal started.
const DefaultSnapshotAfterBytes = 64 << 20

// DefaultPreallocBytes is the largest extension of the preallocated journal
// (bytes of zeros written and synced ahead of the checkpoints; see the
// package comment).
const DefaultPreallocBytes = 4 << 20

// retryDelay is how long the writer waits after a failed checkpoint before the
// ticker tries again on its own (a Wait tries at once), and how long a failed
// extension, rotation or snapshot waits before the next attempt: while the
// disk is full, each attempt costs a failed write, not a busy loop.
const retryDelay = 250 * time.Millisecond

// Options configure an Engine; zero values take the defaults.
type Options struct {
	// FS is the file system the journal lives on; nil = vfs.OS.
	FS                 vfs.FS
	CheckpointInterval time.Duration // default DefaultCheckpointInterval (5 ms)
	SnapshotAfterBytes int64         // journal bytes that trigger a snapshot + new journal; default 64 MiB
	NoSync             bool          // skip fdatasync (tests and benchmarks only: nothing survives a power loss)
	// PreallocBytes is the most zeros one journal extension writes ahead of
	// the checkpoints (each extension adds as much as the file already holds,
	// 64 KiB at first); default DefaultPreallocBytes (4 MiB); < 0 = never
	// preallocate (every checkpoint then grows the file).
	PreallocBytes int64
}

// RecoveryReport says what Open found and repaired.
type RecoveryReport struct {
	Checkpoints    int    // journal checkpoints replayed after the snapshot
	TornBytes      int64  // non-zero bytes after the last checkpoint that were zeroed: a torn or damaged last checkpoint
	TornFile       string // journal file they were in ("" = none)
	Quarantined    string // where a copy of those bytes was kept ("" = none, or the copy failed: see QuarantineErr)
	QuarantineErr  error  // why the copy could not be made (a full disk); recovery went on without it
	SnapshotLoaded string // snapshot file loaded ("" = none)
	LastSeq        uint64 // sequence number of the last checkpoint recovered
	Upgraded       bool   // the directory held format 1 files: they were read, written as a format 2 snapshot and removed
}

// Repaired reports whether Open had to drop a torn tail.
func (r *RecoveryReport) Repaired() bool { return r.TornBytes > 0 }

// Failure is why checkpoints are failing (Engine.Failure).
type Failure struct {
	Err error // the last failed checkpoint's error
	// Sticky: a journal fdatasync failed with an I/O error. What the file holds
	// is unknown, so nothing more is written and every Wait fails until the
	// engine is reopened (a restart). Otherwise (a full disk, a failed write)
	// the writer retries and the failure ends with the first checkpoint that
	// succeeds.
	Sticky bool
	Since  time.Time // when the current run of failures began
}

// Engine holds every (partition, group) cursor and lease in memory and makes
// changes durable through the cursor journal (see the package comment). All
// methods are safe for concurrent use; read-modify-write of one Key is the
// caller's job (the broker holds the partition lock).
type Engine struct {
	fs   vfs.FS
	dir  string
	opts Options

	shards [numShards]shard

	subMu    sync.Mutex
	subs     map[subKey]Subscription
	subDirty map[subKey]struct{}

	recMu   sync.Mutex
	recs    map[uint64][]byte // every record held, by id
	recOps  []recOp           // adds and drops not yet collected by a checkpoint, in order
	nextRec uint64            // id of the next AddRecord

	// changed is set by every mutation after it is applied and cleared by the
	// writer (under mu) just before it collects a checkpoint.
	changed atomic.Bool

	// Group commit bookkeeping, under mu. A generation is one collection by the
	// writer: gen g collects every change made before the writer cleared
	// `changed` for it. durableGen is the last generation on disk.
	mu         sync.Mutex
	cond       *sync.Cond
	nextGen    uint64 // generation the next collection will have
	durableGen uint64
	wantGen    uint64 // highest generation a Wait caller needs
	failedGen  uint64 // newest generation whose checkpoint failed
	failErr    error  // its error, for the Wait callers of generations up to failedGen
	failing    bool   // the last checkpoint attempt failed
	failSince  time.Time
	err        error // sticky: a journal fdatasync failed
	closed     bool  // Close called: no new Wait
	finished   bool  // writer gone after its final checkpoint

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	j *journal // owned by the writer goroutine after Open

	// fileMu serialises changes to the directory's files (a checkpoint write
	// and sync, a rotation, a snapshot's rename and compaction), so a test can
	// copy the directory as a crash would leave it between two of them.
	fileMu sync.Mutex
}

// Open loads the engine in dir (created if missing): the newest valid snapshot,
// then every later journal checkpoint. A torn or damaged last checkpoint
// (never acknowledged: Wait returns only after its sync) is zeroed and
// reported; damage elsewhere returns a *CorruptionError and changes nothing.
// A directory of format 1 is upgraded in place first (see upgrade.go).
func Open(dir string, opts Options) (*Engine, *RecoveryReport, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.SnapshotAfterBytes <= 0 {
		opts.SnapshotAfterBytes = DefaultSnapshotAfterBytes
	}
	switch {
	case opts.PreallocBytes == 0:
		opts.PreallocBytes = DefaultPreallocBytes
	case opts.PreallocBytes < 0:
		opts.PreallocBytes = 0
	case opts.PreallocBytes < minPrealloc:
		opts.PreallocBytes = minPrealloc
	}
	if err := opts.FS.MkdirAll(dir); err != nil {
		return nil, nil, fmt.Errorf("cursor engine %s: %w", dir, err)
	}
	if !opts.NoSync {
		// The directory's own name must survive a crash before any
		// checkpoint in it counts as durable.
		if err := opts.FS.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, nil, fmt.Errorf("cursor engine %s: %w", dir, err)
		}
	}
	e := &Engine{
		fs:   opts.FS,
		dir:  dir,
		opts: opts,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	e.cond = sync.NewCond(&e.mu)
	e.reset()
	rep, err := e.recover()
	if err != nil {
		return nil, nil, err
	}
	go e.writeLoop()
	return e, rep, nil
}

// reset empties the in-memory state (before a recovery).
func (e *Engine) reset() {
	for i := range e.shards {
		e.shards[i].init()
	}
	e.subs = make(map[subKey]Subscription)
	e.subDirty = make(map[subKey]struct{})
	e.recs = make(map[uint64][]byte)
	e.recOps = nil
	e.nextRec = 1
	e.nextGen = 1
}

func (e *Engine) markChanged() {
	if !e.changed.Load() {
		e.changed.Store(true)
	}
}

// Wait blocks until a checkpoint holding every change made (by any caller)
// before the call is durable: written and fdatasync'd, so it survives a crash
// or power loss. It asks the writer for a checkpoint at once rather than waiting
// for the interval.
//
// Errors: a *CheckpointError when the checkpoint that was to hold the changes
// failed (the disk is full, a write failed: the changes stay in memory and a
// later checkpoint retries them, but the caller must not promise durability;
// or a failed fdatasync, Sticky, after which every Wait fails); ErrClosed.
func (e *Engine) Wait() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.waitLocked(e.targetLocked())
}

// targetLocked is the generation that collects every change made so far: a
// change is either already collected (in a generation < nextGen) or still
// flagged, in which case nextGen collects it.
func (e *Engine) targetLocked() uint64 {
	if e.changed.Load() {
		return e.nextGen
	}
	return e.nextGen - 1
}

// waitLocked asks for generation target and blocks until it is durable or
// has failed. e.mu is held.
func (e *Engine) waitLocked(target uint64) error {
	if target > e.wantGen {
		e.wantGen = target
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
	for {
		switch {
		case e.durableGen >= target:
			// A failed generation's changes go into the next one, so a later
			// success covers them too.
			return nil
		case e.err != nil:
			return e.err
		case e.failedGen >= target:
			return e.failErr
		case e.finished:
			return ErrClosed
		}
		e.cond.Wait()
	}
}

// Failure reports whether checkpoints are failing now: true from a failed
// checkpoint until the next one succeeds (never, once Sticky). A full disk
// shows here while changes wait in memory; /health reports it.
func (e *Engine) Failure() (Failure, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return Failure{Err: e.err, Sticky: true, Since: e.failSince}, true
	}
	if !e.failing {
		return Failure{}, false
	}
	return Failure{Err: e.failErr, Since: e.failSince}, true
}

// Close writes a final checkpoint of everything changed, syncs it and closes
// the journal. Changes made before Close survive a restart when it returns nil.
//
// Errors: the final checkpoint's (a *CheckpointError: what changed since the
// last good checkpoint is lost), the journal's close error, ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	<-e.done
	e.mu.Lock()
	e.finished = true
	e.cond.Broadcast()
	err := e.err
	if err == nil && e.durableGen < e.nextGen-1 {
		err = e.failErr // the final checkpoint failed
	}
	e.mu.Unlock()
	if cerr := e.j.close(); err == nil {
		err = cerr
	}
	return err
}
