package cursor

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
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

// Options configure an Engine; zero values take the defaults.
type Options struct {
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
	TornBytes      int64  // bytes truncated away: a torn or corrupt last checkpoint, plus any preallocated zeros around it
	TornFile       string // journal file that was truncated ("" = none)
	SnapshotLoaded string // snapshot file loaded ("" = none)
	LastSeq        uint64 // sequence number of the last checkpoint recovered
}

// Repaired reports whether Open had to drop a torn tail.
func (r *RecoveryReport) Repaired() bool { return r.TornBytes > 0 }

// Engine holds every (partition, group) cursor and lease in memory and makes
// changes durable through the cursor journal (see the package comment). All
// methods are safe for concurrent use; read-modify-write of one Key is the
// caller's job (the broker holds the partition lock).
type Engine struct {
	dir  string
	opts Options

	shards [numShards]shard

	subMu    sync.Mutex
	subs     map[subKey]Subscription
	subDirty map[subKey]struct{}

	recMu    sync.Mutex
	recs     [][]byte // every record held (Records)
	pendRecs [][]byte // added since the last checkpoint collected
	pendDrop bool     // DropRecords since the last checkpoint collected

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
	err        error  // sticky write/sync failure
	closed     bool   // Close called: no new Wait
	finished   bool   // writer gone after its final checkpoint

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
// then every later journal checkpoint; a torn or corrupt last checkpoint is
// truncated and reported. Damage elsewhere returns a *CorruptionError.
func Open(dir string, opts Options) (*Engine, *RecoveryReport, error) {
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("cursor engine %s: %w", dir, err)
	}
	e := &Engine{
		dir:      dir,
		opts:     opts,
		subs:     make(map[subKey]Subscription),
		subDirty: make(map[subKey]struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		nextGen:  1,
	}
	e.cond = sync.NewCond(&e.mu)
	for i := range e.shards {
		e.shards[i].init()
	}
	rep, err := e.recover()
	if err != nil {
		return nil, nil, err
	}
	go e.writeLoop()
	return e, rep, nil
}

func (e *Engine) markChanged() {
	if !e.changed.Load() {
		e.changed.Store(true)
	}
}

// Wait blocks until a checkpoint holding every change made (by any caller)
// before the call is durable: written and fdatasync'd, so it survives a crash
// or power loss. It asks the writer for a checkpoint at once rather than waiting
// for the interval. It returns the write error if the journal failed, or
// ErrClosed.
func (e *Engine) Wait() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	// A change made before this call is either already collected (in a
	// generation < nextGen) or still flagged, in which case nextGen collects it.
	target := e.nextGen - 1
	if e.changed.Load() {
		target = e.nextGen
	}
	if target > e.wantGen {
		e.wantGen = target
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
	for e.durableGen < target && e.err == nil && !e.finished {
		e.cond.Wait()
	}
	switch {
	case e.err != nil:
		return e.err
	case e.durableGen < target:
		return ErrClosed
	}
	return nil
}

// Close writes a final checkpoint of everything changed, syncs it and closes
// the journal. Changes made before Close survive a restart.
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
	e.mu.Unlock()
	if cerr := e.j.close(); err == nil {
		err = cerr
	}
	return err
}
