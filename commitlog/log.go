package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/vfs"
)

// SyncPolicy says when a batch is durable, and so when the broker answers a
// write (--sync; docs/format.md section 6). It is the one sync policy type:
// the partition logs are synced by the broker's flush pass whatever it is.
type SyncPolicy int

const (
	// SyncAlways: a ticket completes after its batch's fdatasync.
	SyncAlways SyncPolicy = iota
	// SyncInterval: after the batch's write; a timer fdatasyncs the file
	// every Options.SyncInterval.
	SyncInterval
	// SyncNever: after the write; only Close syncs (tests and benchmarks).
	SyncNever
)

// Defaults for Options.
const (
	DefaultFileBytes    = 64 << 20
	DefaultInitialBytes = 1 << 20
	DefaultSyncInterval = 10 * time.Millisecond
)

// Options configure Open; zero values take the defaults.
type Options struct {
	FS           vfs.FS // nil = vfs.OS
	Sync         SyncPolicy
	SyncInterval time.Duration
	// FileBytes is the most a file grows to (bytes): the log rotates to the
	// next one when a batch does not fit; default 64 MiB.
	FileBytes int64
	// InitialBytes is how much a new file is prepared with (bytes); it is
	// extended ahead of the batches, doubling, up to FileBytes, so a small
	// disk or a test directory is not asked for 64 MiB at once; default
	// 1 MiB (at most FileBytes).
	InitialBytes int64
	// QuarantineDir receives the bytes of a torn tail before they are zeroed;
	// "" = <dir>/quarantine.
	QuarantineDir string
	// StartLSN is the LSN an empty log starts at (default 1): a caller whose
	// state names LSNs (snapshots) passes the next one it expects, so that a
	// lost log directory never makes LSNs run backwards.
	StartLSN LSN
	// OnSync, when set, is called with the duration (µs) of every fdatasync
	// of a batch (a latency histogram counts them all).
	OnSync func(micros int64)
	// GroupCommitWait is the longest the committer waits for more callers
	// before it writes a batch (SyncAlways only; groupwait.go has the rule:
	// it waits only when at least two callers were seen waiting at once and
	// callers recently came at most a quarter of it apart, and only until as
	// many wait on the batch); 0 = never waits.
	GroupCommitWait time.Duration
	// Urgent, when set, says whether an entry of kind is one a batch is
	// never held for: the committer writes a batch holding one at once,
	// waiting or not. The broker names its consumers' entries (checkpoints,
	// DLQ entries, transactions) while the process has CPU to spare: a pop
	// or an ack answers a consumer, whose latency the wait must not add to.
	// Called once per Append, outside the log's lock.
	Urgent func(kind byte) bool
}

// Log is an open commit log. Append, Ticket.Wait, Read and the accessors are
// safe for concurrent use.
type Log struct {
	dir  string
	opts Options
	fs   vfs.FS

	mu        sync.Mutex
	files     []*walFile // in LSN order; the last is the one appends go to
	spare     *walFile   // prepared, not yet in use (nil = none ready)
	next      LSN        // LSN of the next Append
	start     LSN        // the last truncation point (entries below it are gone); start.go
	pend      *batch     // being gathered (nil = none)
	err       error      // sticky failure
	closed    bool
	abandoned bool  // Abandon: the committer writes nothing more
	noSpace   error // the last failure to prepare a file (nil = none since the last success)

	durable atomic.Uint64 // every LSN up to this is durable (per the sync policy)

	kick     chan struct{} // wakes the committer
	prepKick chan struct{} // wakes the preparer
	stop     chan struct{}
	done     sync.WaitGroup
	syncMu   sync.Mutex // the interval timer's sync against the committer's rotations
	spares   uint64     // spare files prepared so far (names them); under mu
	rec      *Recovery
	group    groupWait // the group-commit wait (groupwait.go)
	gate     syncGate  // a batch's write and sync in flight (AwaitSync, syncgate.go)
}

// batch is the entries gathered between two writes.
type batch struct {
	chunks  []*chunk
	done    chan struct{}
	err     error
	l       *Log
	waiters atomic.Int64 // tickets blocked in Wait on this batch so far
	urgent  atomic.Bool  // holds an Options.Urgent entry: never held back
}

// chunkBufs recycles chunk buffers: a batch's buffer goes back once it is
// written, so steady appending allocates none.
var chunkBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledChunk keeps one huge batch from pinning its buffer in the pool.
const maxPooledChunk = 4 << 20

// getChunkBuf returns a pooled buffer holding room for a frame header and
// batch head. The pool holds *[]byte and the chunk keeps the pointer it came
// in, so returning the buffer allocates nothing (a put of &b would allocate
// a new slice header every frame).
func getChunkBuf(need int64) *[]byte {
	bp := chunkBufs.Get().(*[]byte)
	if int64(cap(*bp)) < frameOverhead+need {
		*bp = make([]byte, 0, max(frameOverhead+need, 64<<10))
	}
	*bp = (*bp)[:frameOverhead]
	return bp
}

// putChunkBuf returns bp to the pool holding b, the buffer it grew into.
func putChunkBuf(bp *[]byte, b []byte) {
	if bp != nil && cap(b) <= maxPooledChunk {
		*bp = b[:0]
		chunkBufs.Put(bp)
	}
}

// chunk is the part of a batch that goes into one file: one frame.
type chunk struct {
	w     *walFile
	first LSN
	count int
	buf   []byte  // frame header room, batch head room, then the entries
	pool  *[]byte // the pool's holder of buf, handed back once written
}

// Ticket is what Append returns (package lsn's, the one "append, then wait"
// shape every log of comb hands back): its LSN, and a Wait that blocks until
// the entry is durable (batch.Wait).
type Ticket = lsn.Ticket

// Wait blocks until the batch, and so each entry of it, is durable per the
// sync policy (or written, for SyncInterval and SyncNever): the Waiter of
// the batch's tickets.
//
// Errors: ErrFailed (wrapped with the cause) when the batch could not be
// written or synced; ErrClosed when the log closed first.
func (b *batch) Wait() error {
	select {
	case <-b.done:
		return b.err
	default:
	}
	// Counted so that the committer knows how many callers share its
	// batches (the group-commit wait, groupwait.go).
	b.l.group.enter(b)
	<-b.done
	b.l.group.leave()
	return b.err
}

// Open opens (creating if missing) the log in dir and recovers it (see the
// package comment): afterwards Read yields every durable entry, and Append
// continues at the LSN after the last one.
//
// Errors: ErrCorrupt (wrapped with the file and byte range) for damage that
// is not a torn tail; the file system's, wrapped with the path.
func Open(dir string, opts Options) (*Log, *Recovery, error) {
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.FileBytes <= 0 {
		opts.FileBytes = DefaultFileBytes
	}
	if opts.InitialBytes <= 0 {
		opts.InitialBytes = DefaultInitialBytes
	}
	opts.InitialBytes = min(opts.InitialBytes, opts.FileBytes)
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.QuarantineDir == "" {
		opts.QuarantineDir = filepath.Join(dir, "quarantine")
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, kick: make(chan struct{}, 1), prepKick: make(chan struct{}, 1), stop: make(chan struct{})}
	l.group.wake = make(chan struct{}, 1)
	l.group.gap, l.group.lastTake = gapClamp, time.Now()
	rec, err := l.recover()
	if err != nil {
		l.closeFiles()
		return nil, nil, err
	}
	l.rec = rec
	l.durable.Store(uint64(l.next - 1))
	l.done.Add(2)
	go l.commitLoop()
	go l.prepareLoop()
	if opts.Sync == SyncInterval {
		l.done.Add(1)
		go l.syncLoop()
	}
	l.kickPreparer()
	return l, rec, nil
}

func (l *Log) noSync() bool { return l.opts.Sync == SyncNever }

// Append adds one entry (kind and a copy of payload) to the batch being
// gathered and returns at once; Ticket.Wait says when it is durable. Entries
// get increasing LSNs in the order Append is called.
//
// Errors: ErrTooLarge; ErrNoSpace (nothing appended: no prepared file has
// room and none can be made, retry later); ErrFailed; ErrClosed.
func (l *Log) Append(kind byte, payload []byte) (Ticket, error) {
	if len(payload) > MaxEntry {
		return Ticket{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(payload))
	}
	need := int64(entrySize(payload))
	// Asked before the lock: the broker's answer may read the scheduler's
	// statistics (every 100 ms), which no other Append should wait for.
	urgent := l.opts.Urgent != nil && l.opts.Urgent(kind)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return Ticket{}, ErrClosed
	case l.err != nil:
		return Ticket{}, l.err
	}
	if l.pend == nil {
		l.pend = &batch{done: make(chan struct{}), l: l}
	}
	b := l.pend
	var c *chunk
	if n := len(b.chunks); n > 0 {
		c = b.chunks[n-1]
	}
	w := l.files[len(l.files)-1]
	over := need
	if c == nil || c.w != w {
		over += frameOverhead
	}
	if over > w.room() {
		var err error
		if w.end+w.reserved+over+tailGuard <= l.opts.FileBytes {
			err = l.extendLocked(w, w.end+w.reserved+over+tailGuard)
		} else {
			w, err = l.rotateLocked(need)
			over = need + frameOverhead
		}
		if err != nil {
			return Ticket{}, err
		}
	}
	if c == nil || c.w != w {
		bp := getChunkBuf(need)
		c = &chunk{w: w, first: l.next, buf: *bp, pool: bp}
		b.chunks = append(b.chunks, c)
	}
	w.reserved += over
	c.buf = appendEntry(c.buf, kind, payload)
	c.count++
	n := l.next
	l.next++
	if urgent && !b.urgent.Swap(true) {
		l.group.nudge() // a committer gathering for b writes it now
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return lsn.NewTicket(n, b), nil
}

// rotateLocked makes the spare the file appends go to, preparing one now if
// none is ready, and extends it for an entry of need bytes.
func (l *Log) rotateLocked(need int64) (*walFile, error) {
	w := l.spare
	if w == nil {
		var err error
		l.spares++
		if w, err = prepareFile(l.fs, filepath.Join(l.dir, spareName(l.spares)), l.opts.InitialBytes, l.noSync()); err != nil {
			l.noSpace = err
			return nil, fmt.Errorf("%w: %w", ErrNoSpace, err)
		}
	}
	if over := need + frameOverhead; over > w.room() {
		if err := l.extendLocked(w, w.end+over+tailGuard); err != nil {
			if w != l.spare {
				w.f.Close()
				_ = l.fs.Remove(w.path)
			}
			return nil, err
		}
	}
	l.spare = nil
	l.files = append(l.files, w)
	// A file could be made and extended: an earlier failure is stale (the
	// preparer reports a new one if the next spare cannot be made).
	l.noSpace = nil
	l.kickPreparer()
	return w, nil
}

// extendLocked grows w to hold at least need bytes, now (an appender found no
// room: the preparer did not keep up, or the entry is large).
//
// Errors: ErrNoSpace (wrapped) when the zeros cannot be written and synced.
func (l *Log) extendLocked(w *walFile, need int64) error {
	size := max(need, min(2*w.size.Load(), max(l.opts.FileBytes, need)))
	least := min(size, roundUp(need, growthQuantum))
	if err := w.extendSome(size, least, l.noSync()); err != nil {
		l.noSpace = err
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	if l.spare != nil {
		l.noSpace = nil
	}
	return nil
}

func (l *Log) kickPreparer() {
	select {
	case l.prepKick <- struct{}{}:
	default:
	}
}

// DurableLSN returns the LSN up to which every entry is durable.
func (l *Log) DurableLSN() LSN { return LSN(l.durable.Load()) }

// RetainedBytes returns the bytes of batches the log holds (what truncation
// would free), headers and preallocated zeros not counted.
func (l *Log) RetainedBytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, w := range l.files {
		if w.first != 0 {
			n += w.end
		}
	}
	return n
}

// NextLSN returns the LSN the next Append gets.
func (l *Log) NextLSN() LSN {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Err returns the sticky failure (wrapping ErrFailed), else the last failure
// to prepare a file while one is missing (wrapping ErrNoSpace: appends may
// fail), else nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.err != nil:
		return l.err
	case l.noSpace != nil:
		return fmt.Errorf("%w: %w", ErrNoSpace, l.noSpace)
	}
	return nil
}

// SpareReady reports whether a prepared spare file is waiting for the next
// rotation. While one is, the preparer is idle (it only makes a file when
// none is ready), so no file appears behind a caller's back: fault tests
// wait for it before they take the disk away.
func (l *Log) SpareReady() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spare != nil
}

// Abandon stops the log as a crash (kill -9) would: the batch being
// gathered is not written (its tickets get ErrClosed), nothing is synced,
// the files are closed. For crash tests of the callers.
func (l *Log) Abandon() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed, l.abandoned = true, true
	l.mu.Unlock()
	close(l.stop)
	l.done.Wait()
	l.mu.Lock()
	if b := l.pend; b != nil {
		l.pend = nil
		b.err = ErrClosed
		close(b.done)
	}
	l.mu.Unlock()
	_ = l.closeFiles()
}

// Close writes and syncs what was appended, stops the goroutines and closes
// the files. Tickets not yet complete complete first.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	l.done.Wait()
	l.mu.Lock()
	err := l.err
	if err == nil && !l.noSync() {
		for _, w := range l.files {
			if !w.synced {
				if serr := w.f.Sync(); serr != nil {
					err = serr
				}
			}
		}
	}
	l.mu.Unlock()
	if cerr := l.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) closeFiles() error {
	var errs []error
	for _, w := range l.files {
		if w.f != nil {
			errs = append(errs, w.f.Close())
		}
	}
	if l.spare != nil {
		errs = append(errs, l.spare.f.Close())
		l.spare = nil
	}
	return errors.Join(errs...)
}
