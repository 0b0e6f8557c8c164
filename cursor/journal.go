package cursor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// journal is the append side of the cursor journal; only the writer goroutine
// touches it after Open.
type journal struct {
	dir      string
	noSync   bool
	f        *os.File
	fd       int
	name     string
	size     int64  // logical end: the byte where the next checkpoint is written
	alloc    int64  // file size: [size, alloc) is preallocated zeros
	prealloc int64  // most bytes one extension adds; 0 = no preallocation
	nextSeq  uint64 // sequence number of the next checkpoint
	enc      *encoder

	// logRecs are the redo records as of the last written checkpoint: what a
	// snapshot taken now must carry.
	logRecs [][]byte

	snapMu   sync.Mutex
	snapBusy bool
	snapWG   sync.WaitGroup
	snapErr  error
}

func journalName(seq uint64) string  { return fmt.Sprintf("journal-%016x.log", seq) }
func snapshotName(seq uint64) string { return fmt.Sprintf("snapshot-%016x.snap", seq) }

// openFile opens name in dir for writing checkpoints at byte end (the logical
// end of the journal; everything after it is zeros or nothing), creating it
// (and syncing the directory so the new name survives a crash) when missing.
func (j *journal) openFile(name string, create bool, end int64) error {
	path := filepath.Join(j.dir, name)
	flags := os.O_WRONLY
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return fmt.Errorf("cursor journal: %w", err)
	}
	if create && !j.noSync {
		if err := syncDir(j.dir); err != nil {
			f.Close()
			return err
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("cursor journal %s: %w", path, err)
	}
	j.f, j.fd, j.name, j.size, j.alloc = f, int(f.Fd()), name, end, st.Size()
	return nil
}

// append writes one frame at the logical end with one pwrite and makes it
// durable with one fdatasync. After it returns nil the checkpoint survives a
// crash. The frame lands in preallocated space (see extend), so the sync
// flushes data only and ext4 commits no metadata (no size change).
func (j *journal) append(frame []byte) error {
	if end := j.size + int64(len(frame)); end > j.alloc && j.prealloc > 0 {
		if err := j.extend(end); err != nil {
			return err
		}
	}
	if err := pwriteKeepP(j.fd, frame, j.size); err != nil {
		return fmt.Errorf("cursor journal %s write at byte %d: %w", j.name, j.size, err)
	}
	if !j.noSync {
		if err := fdatasyncKeepP(j.fd); err != nil {
			return fmt.Errorf("cursor journal %s fdatasync: %w", j.name, err)
		}
	}
	j.size += int64(len(frame))
	if j.size > j.alloc {
		j.alloc = j.size
	}
	j.nextSeq++
	return nil
}

// Preallocation steps: an extension adds as many bytes as the file already
// holds, at least minPrealloc and at most Options.PreallocBytes, so a short
// lived journal (tests, a fresh server) stays small.
const (
	minPrealloc = 64 << 10
	zeroChunk   = 256 << 10
)

var zeros = make([]byte, zeroChunk)

// extendAhead extends the file once less than half an extension of
// preallocated space is left. The writer calls it after releasing the waiters
// of a checkpoint, so the extension's write and sync (about 2.5 ms for 4 MiB on
// the benchmark machine) delay no caller that already wrote; append extends
// only when a frame does not fit at all.
func (j *journal) extendAhead() error {
	if j.prealloc == 0 {
		return nil
	}
	step := min(max(j.alloc, minPrealloc), j.prealloc)
	if j.alloc-j.size >= step/2 {
		return nil
	}
	return j.extend(j.size + 1)
}

// extend grows the file with written zeros until it holds at least need
// bytes, and syncs that once. Zeros must really be written: fallocate alone
// leaves unwritten extents whose conversion on the first overwrite is again a
// metadata commit at every fdatasync.
//
// Durability: a crash during or after an extension leaves zeros (or nothing)
// after the last checkpoint, which recovery reads as the end of the journal
// (see the package comment). The extension is synced before any checkpoint is
// written into it, so no later fdatasync has to commit a size change.
func (j *journal) extend(need int64) error {
	step := min(max(j.alloc, minPrealloc), j.prealloc)
	newAlloc := max(j.alloc, j.size) + step
	for newAlloc < need {
		newAlloc += step
	}
	// Reserve the blocks in one piece first (best effort: not every file
	// system supports it, and the zero writes below allocate anyway).
	_ = unix.Fallocate(j.fd, 0, j.alloc, newAlloc-j.alloc)
	for off := j.alloc; off < newAlloc; {
		n := min(int64(len(zeros)), newAlloc-off)
		if _, err := unix.Pwrite(j.fd, zeros[:n], off); err != nil {
			return fmt.Errorf("cursor journal %s: preallocate at byte %d: %w", j.name, off, err)
		}
		off += n
	}
	if !j.noSync {
		if err := unix.Fdatasync(j.fd); err != nil {
			return fmt.Errorf("cursor journal %s: preallocate fdatasync: %w", j.name, err)
		}
	}
	j.alloc = newAlloc
	return nil
}

// fdatasyncKeepP syncs fd without handing the goroutine's P back to the
// scheduler. A normal syscall of ~0.3 ms lets the P go; on a busy 2-core box
// the writer then queues behind every runnable caller before it can release
// the waiters, which turned a 0.3 ms sync into 3-5 ms of Wait. Holding the P
// costs one core for the duration of the sync, once per checkpoint.
func fdatasyncKeepP(fd int) error {
	if _, _, errno := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// pwriteKeepP writes b to fd at byte off with raw pwrite calls, for the same
// reason as fdatasyncKeepP: a page-cache write of a checkpoint takes tens of
// µs, long enough for the scheduler to take the P away.
func pwriteKeepP(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, _, errno := unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		switch {
		case errno == unix.EINTR || errno == unix.EAGAIN:
			continue
		case errno != 0:
			return errno
		case n == 0:
			return io.ErrShortWrite
		}
		b = b[n:]
		off += int64(n)
	}
	return nil
}

func (j *journal) close() error {
	j.snapWG.Wait()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if err != nil {
		return fmt.Errorf("cursor journal %s: %w", j.name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cursor dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cursor dir %s fsync: %w", dir, err)
	}
	return nil
}

// writeLoop is the single writer: it writes a checkpoint at once when a Wait
// caller needs one, on every CheckpointInterval tick while anything changed,
// and a final one on Close.
func (e *Engine) writeLoop() {
	defer close(e.done)
	t := time.NewTicker(e.opts.CheckpointInterval)
	defer t.Stop()
	for {
		final := false
		select {
		case <-e.kick:
		case <-t.C:
			if !e.changed.Load() {
				continue
			}
		case <-e.stop:
			final = true
		}
		for {
			e.checkpoint()
			e.mu.Lock()
			again := !final && e.err == nil && e.wantGen >= e.nextGen
			e.mu.Unlock()
			if !again {
				break
			}
		}
		if final {
			return
		}
	}
}

// checkpoint collects every change since the previous collection into one
// frame, writes and syncs it, then releases the Wait callers of its generation.
func (e *Engine) checkpoint() {
	e.mu.Lock()
	if e.err != nil {
		e.mu.Unlock()
		return
	}
	gen := e.nextGen
	e.nextGen++
	// Cleared before collecting: a change that lands after this point either
	// is collected below or sets the flag again for the next generation.
	e.changed.Store(false)
	e.mu.Unlock()

	j := e.j
	j.enc.begin(kindCheckpoint, j.nextSeq)
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		if len(sh.dirty) > 0 {
			for k := range sh.dirty {
				s, ok := sh.getLocked(k)
				j.enc.state(k, s, !ok)
			}
			if len(sh.dirty) > dirtyShrinkLen {
				sh.dirty = make(map[Key]struct{})
			} else {
				clear(sh.dirty)
			}
		}
		sh.mu.Unlock()
	}
	e.subMu.Lock()
	for k := range e.subDirty {
		s, ok := e.subs[k]
		j.enc.sub(k, s, !ok)
	}
	clear(e.subDirty)
	e.subMu.Unlock()
	e.recMu.Lock()
	drop, recs := e.pendDrop, e.pendRecs
	e.pendDrop, e.pendRecs = false, nil
	e.recMu.Unlock()
	if drop {
		j.enc.dropRecords()
	}
	for _, r := range recs {
		j.enc.record(r)
	}

	var err error
	e.fileMu.Lock()
	if j.enc.entries > 0 {
		err = j.append(j.enc.finish())
	}
	e.mu.Lock()
	if err != nil {
		e.err = err
	} else {
		e.durableGen = gen
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	defer e.fileMu.Unlock()
	if err != nil || j.enc.entries == 0 {
		return
	}
	if drop {
		j.logRecs = nil
	}
	j.logRecs = append(j.logRecs, recs...)
	var ferr error
	if j.size >= e.opts.SnapshotAfterBytes {
		ferr = e.rotate()
	} else {
		ferr = j.extendAhead()
	}
	if ferr != nil {
		e.mu.Lock()
		e.err = ferr
		e.cond.Broadcast()
		e.mu.Unlock()
	}
}

// rotate starts a new journal after the checkpoint just written and takes a
// snapshot of everything up to it in the background. Older files are deleted
// only once the snapshot is durable, so a crash at any point recovers.
func (e *Engine) rotate() error {
	j := e.j
	j.snapMu.Lock()
	busy := j.snapBusy
	if !busy {
		j.snapBusy = true
	}
	j.snapMu.Unlock()
	if busy {
		return nil
	}
	upTo := j.nextSeq - 1
	old := j.f
	if err := j.openFile(journalName(j.nextSeq), true, 0); err != nil {
		j.snapMu.Lock()
		j.snapBusy = false
		j.snapMu.Unlock()
		return err
	}
	if err := old.Close(); err != nil {
		return fmt.Errorf("cursor journal: close after rotation: %w", err)
	}
	if err := j.extendAhead(); err != nil {
		return err
	}
	recs := slices.Clone(j.logRecs)
	j.snapWG.Add(1)
	go func() {
		defer j.snapWG.Done()
		err := e.writeSnapshot(upTo, recs)
		j.snapMu.Lock()
		j.snapBusy = false
		j.snapErr = err
		j.snapMu.Unlock()
	}()
	return nil
}
