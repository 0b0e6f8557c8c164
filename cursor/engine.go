package cursor

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/vfs"
)

// DefaultCheckpointInterval is the longest a change waits in memory before a
// checkpoint writes it (seed 004: "at least every 5 ms").
const DefaultCheckpointInterval = 5 * time.Millisecond

// retryDelay is how long the writer waits after a failed checkpoint before the
// ticker tries again on its own (a Wait tries at once): while the disk is
// full, each attempt costs a refused append, not a busy loop.
const retryDelay = 250 * time.Millisecond

// Log is where checkpoints become durable: the broker's commit log. The
// engine calls it from its writer goroutine only, one checkpoint at a time:
// it calls wait before it appends the next one.
type Log interface {
	// AppendCheckpoint hands one checkpoint body to the log; the log must
	// not keep body after it returns (the engine reuses the buffer). The
	// checkpoint is durable once the ticket's Wait returns nil; its LSN
	// (>= 1) orders it among everything in the log, and later checkpoints
	// get higher ones. After a crash, every checkpoint whose Wait returned
	// nil is in the log; any other may or may not be.
	AppendCheckpoint(body []byte) (lsn.Ticket, error)
	// Retryable reports whether err, from AppendCheckpoint or a wait,
	// leaves the log usable, so that the same checkpoint may be tried again
	// (a full disk: commitlog.ErrNoSpace). Otherwise the failure is sticky:
	// every later Wait fails until a restart (commitlog.ErrFailed).
	Retryable(err error) bool
}

// Options configure an Engine; zero values take the defaults.
type Options struct {
	CheckpointInterval time.Duration // default DefaultCheckpointInterval (5 ms)
	// FS is the file system the snapshots live on; nil = vfs.OS.
	FS     vfs.FS
	NoSync bool // skip the snapshots' fsyncs (tests and benchmarks only; the Log decides the checkpoints' durability)
	// Log receives the checkpoints; required before Start.
	Log Log
	// Now is the clock a checkpoint records and ApplyCommitted rebases
	// lease expiries on (format.go, version 4); nil = time.Now. The broker
	// passes its own (Config.Now), which tests fake.
	Now func() time.Time
}

// RecoveryReport says what Open found.
type RecoveryReport struct {
	SnapshotLoaded string // snapshot file loaded ("" = none)
	// ReplayFrom: the caller replays every checkpoint of the log with an LSN
	// >= ReplayFrom, in LSN order, through ApplyCheckpoint; every checkpoint
	// below it is covered by the snapshot. 1 when there is no snapshot.
	ReplayFrom uint64
	// Upgraded: the directory held format 1 or 2 files (journals of their
	// own): they were read, written as one format 3 snapshot and removed.
	Upgraded     bool
	UpgradedFrom int    // with Upgraded: the format read (1 or 2)
	LastSeq      uint64 // with Upgraded: the last checkpoint of the old journals
	// LegacyRecords are the transaction redo records a format 1 or 2
	// directory held, oldest first: committed transactions whose effects
	// may be missing. The broker applies them (idempotently) and calls
	// ForgetLegacyRecords once that is durable; until then every snapshot
	// keeps them and every Open returns them again.
	LegacyRecords [][]byte
}

// Failure is why checkpoints are failing (Engine.Failure).
type Failure struct {
	Err error // the last failed checkpoint's error
	// Sticky: the Log said the error is not retryable (Log.Retryable): every
	// Wait fails until the engine is reopened (a restart). Otherwise (a full
	// disk) the writer retries and the failure ends with the first
	// checkpoint that succeeds.
	Sticky bool
	Since  time.Time // when the current run of failures began
}

// Engine holds every (partition, group) cursor and lease in memory and makes
// changes durable as checkpoints in the commit log (see the package
// comment). All methods are safe for concurrent use; read-modify-write of
// one Key is the caller's job (the broker holds the partition lock).
type Engine struct {
	abandoned atomic.Bool // Abandon: the writer exits with no final checkpoint
	fs        vfs.FS
	dir       string
	opts      Options

	shards [numShards]shard

	subMu    sync.Mutex
	subs     map[subKey]Subscription
	subDirty map[subKey]struct{}

	// changed is set by every mutation after it is applied and cleared by the
	// writer (under mu) just before it collects a checkpoint.
	changed atomic.Bool

	// Group commit bookkeeping, under mu. A generation is one collection by the
	// writer: gen g collects every change made before the writer cleared
	// `changed` for it. durableGen is the last generation in the log.
	mu sync.Mutex
	// conds[g%2] is where the Wait callers of generation g block (Wait
	// and waitLocked): only two generations have callers at any time, the
	// one being written (nextGen-1) and the next (nextGen), so the end of
	// a checkpoint wakes its own callers and leaves the next one's asleep.
	// One cond woke both, and the next generation's callers (about half of
	// them under a steady load) ran only to find their generation not
	// durable yet and block again (issue 23).
	conds      [2]*sync.Cond
	nextGen    uint64 // generation the next collection will have
	durableGen uint64
	wantGen    uint64 // highest generation a Wait caller needs
	failedGen  uint64 // newest generation whose checkpoint failed
	failErr    error  // its error, for the Wait callers of generations up to failedGen
	failing    bool   // the last checkpoint attempt failed
	failSince  time.Time
	err        error // sticky: the Log failed for good
	started    bool  // Start called: the writer runs
	closed     bool  // Close called: no new Wait
	finished   bool  // writer gone after its final checkpoint
	// A Snapshot in progress (snapActive) needs the LSN of the first
	// checkpoint whose collection ended after it began reading (snapFrom,
	// 0 = none yet): its replayFrom (see snapshot.go).
	snapActive bool
	snapFrom   uint64

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	enc        *encoder // the writer's checkpoint bodies
	splitBytes int      // checkpointSplitBytes (tests make it small)

	snapMu sync.Mutex // one Snapshot at a time

	legacyMu sync.Mutex
	legacy   [][]byte // redo records of a format 1 or 2 directory, kept in snapshots until ForgetLegacyRecords

	// snapshotReadHook, when set (tests), runs after a Snapshot read shard i.
	snapshotReadHook func(i int)
	// waitHook, when set (tests), runs under mu as a Wait caller of
	// generation target blocks (woke false) and each time it wakes (true).
	waitHook func(target uint64, woke bool)
}

// Open loads the newest snapshot in dir (created if missing); it starts no
// goroutine and writes nothing unless the directory needs an upgrade. The
// caller then replays the log's checkpoints from RecoveryReport.ReplayFrom
// through ApplyCheckpoint and calls Start.
//
// A directory of format 1 or 2 (journal files) is upgraded first: its
// snapshot and journals are replayed with their own rules, the result
// written as one format 3 snapshot (crash-safe), the old files removed; the
// redo records they held are in RecoveryReport.LegacyRecords.
//
// Errors: a *CorruptionError for a damaged snapshot or damaged old files
// (nothing is changed), file system errors wrapped with the directory.
func Open(dir string, opts Options) (*Engine, *RecoveryReport, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if err := opts.FS.MkdirAll(dir); err != nil {
		return nil, nil, fmt.Errorf("cursor engine %s: %w", dir, err)
	}
	if !opts.NoSync {
		// The directory's own name must survive a crash before any
		// snapshot in it counts as durable.
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
		enc:  newEncoder(nil),
	}
	e.splitBytes = checkpointSplitBytes
	e.conds = [2]*sync.Cond{sync.NewCond(&e.mu), sync.NewCond(&e.mu)}
	e.reset()
	rep, err := e.recover()
	if err != nil {
		return nil, nil, err
	}
	return e, rep, nil
}

// reset empties the in-memory state (before a recovery).
func (e *Engine) reset() {
	for i := range e.shards {
		e.shards[i].init()
	}
	e.subs = make(map[subKey]Subscription)
	e.subDirty = make(map[subKey]struct{})
	e.legacy = nil
	e.nextGen = 1
}

// Start starts the writer goroutine, after recovery (ApplyCheckpoint);
// changes made before it (Set during recovery) go into its first
// checkpoint. A second call does nothing. It panics without Options.Log: a
// broken invariant of the caller, not a condition to handle.
func (e *Engine) Start() {
	if e.opts.Log == nil {
		panic("cursor: Start without Options.Log")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.closed {
		return
	}
	e.started = true
	go e.writeLoop()
}

func (e *Engine) markChanged() {
	if !e.changed.Load() {
		e.changed.Store(true)
	}
}

// Wait blocks until a checkpoint holding every change made (by any caller)
// before the call is durable in the Log (its wait returned nil), so it
// survives a crash or power loss. It asks the writer for a checkpoint at once
// rather than waiting for the interval.
//
// Errors: a *CheckpointError when the checkpoint that was to hold the changes
// failed (the log refused it, or its wait failed: the changes stay in memory
// and a later checkpoint retries them, but the caller must not promise
// durability; Sticky when the Log said the error is not retryable, after
// which every Wait fails); ErrNotStarted before Start; ErrClosed.
func (e *Engine) Wait() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrClosed
	case !e.started:
		return ErrNotStarted
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
		if e.waitHook != nil {
			e.waitHook(target, false)
		}
		e.conds[target%2].Wait()
		if e.waitHook != nil {
			e.waitHook(target, true)
		}
	}
}

// wakeAllLocked wakes the callers of both generations: for what ends every
// wait (a sticky error, the writer gone). e.mu is held.
func (e *Engine) wakeAllLocked() {
	e.conds[0].Broadcast()
	e.conds[1].Broadcast()
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

// Abandon stops the engine as a crash (kill -9) would: the writer exits
// without a final checkpoint and nothing more is written. Waiters get
// ErrClosed. For crash tests of the callers.
func (e *Engine) Abandon() {
	e.abandoned.Store(true)
	_ = e.Close()
}

// Close hands a final checkpoint of everything changed to the Log, waits for
// it, and stops the writer; a Snapshot in progress fails with ErrClosed.
// Changes made before Close survive a restart when it returns nil. Close the
// engine before the Log. An engine never started writes nothing.
//
// Errors: the final checkpoint's (a *CheckpointError: what changed since the
// last good checkpoint is lost), ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.closed = true
	started := e.started
	e.mu.Unlock()
	if started {
		close(e.stop)
		<-e.done
	}
	e.mu.Lock()
	e.finished = true
	e.wakeAllLocked()
	var err error
	if started {
		err = e.err
		if err == nil && e.durableGen < e.nextGen-1 {
			err = e.failErr // the final checkpoint failed
		}
	}
	e.mu.Unlock()
	// A Snapshot that was waiting has seen finished; let it clean up before
	// the caller closes what lies under the engine.
	e.snapMu.Lock()
	//lint:ignore SA2001 an empty critical section: it waits for the Snapshot in progress
	e.snapMu.Unlock()
	return err
}
