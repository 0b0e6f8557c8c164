package cursor

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/combmq/comb/vfs"
)

// journal is the append side of the cursor journal; only the writer goroutine
// touches it after Open (the snapshot goroutine reads dir, fs and noSync).
type journal struct {
	fs       vfs.FS
	dir      string
	noSync   bool
	f        vfs.File
	name     string
	size     int64 // logical end: the byte where the next checkpoint is written
	alloc    int64 // file size: [size, alloc) is zeros, synced
	prealloc int64 // most bytes one extension adds; 0 = no preallocation
	// dirtyEnd > size: [size, dirtyEnd) may hold bytes of a write that failed
	// (or of a torn checkpoint found at Open); the next checkpoint writes
	// zeros over whatever of it the checkpoint does not cover, in the same
	// sync, so nothing but zeros ever follows the last checkpoint.
	dirtyEnd int64
	nextSeq  uint64 // sequence number of the next checkpoint
	enc      *encoder

	// logRecs are the redo records as of the last written checkpoint: what a
	// snapshot taken now must carry.
	logRecs map[uint64][]byte

	extendRetryAt time.Time // a failed extension is not retried before this
	rotateRetryAt time.Time // nor a failed rotation

	snapMu      sync.Mutex
	snapBusy    bool
	snapUpTo    uint64 // rotation boundary whose snapshot is missing (0 = none)
	snapRetryAt time.Time
	snapErr     error // the last snapshot's error (nil = it succeeded)
	snapWG      sync.WaitGroup
}

// journalName is the name of the format 2 journal whose first checkpoint is seq.
func journalName(seq uint64) string { return fmt.Sprintf("journal-%016x.v2.log", seq) }

// snapshotName is the name of the format 2 snapshot of all state as of checkpoint seq.
func snapshotName(seq uint64) string { return fmt.Sprintf("snapshot-%016x.v2.snap", seq) }

// use makes f (holding checkpoints up to byte end, zeros after) the file the
// next checkpoint goes to.
func (j *journal) use(f vfs.File, name string, end int64) error {
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("cursor journal %s: %w", name, err)
	}
	j.f, j.name, j.size, j.alloc, j.dirtyEnd = f, name, end, max(size, end), 0
	return nil
}

// create makes a new, empty journal file and syncs the directory so that its
// name survives a crash before any checkpoint goes into it. A file of that
// name can only be left by an earlier attempt that failed before its first
// checkpoint (names are the next checkpoint's sequence number), so it is
// truncated. On failure the file is removed again.
func (j *journal) create(name string) (vfs.File, error) {
	path := filepath.Join(j.dir, name)
	f, err := j.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, fmt.Errorf("cursor journal %s: create: %w", name, err)
	}
	if !j.noSync {
		if err = j.fs.SyncDir(j.dir); err != nil {
			err = fmt.Errorf("cursor journal %s: sync directory: %w", name, err)
		}
	}
	if err != nil {
		_ = f.Close()
		_ = j.fs.Remove(path)
		return nil, err
	}
	return f, nil
}

// append writes one checkpoint frame at the logical end and makes it durable
// with one fdatasync. After it returns nil the checkpoint survives a crash.
// The frame lands in preallocated space (see extend), so the sync flushes data
// only and ext4 commits no metadata (no size change).
//
// On failure nothing moves: the next attempt writes its frame at the same
// byte, and zeros over any bytes this attempt may have left past it
// (dirtyEnd). Until then a crash finds those bytes as a torn last checkpoint,
// which was never acknowledged. Errors: the write's or preallocation's
// (retryable), or a *syncError wrapping the fdatasync's.
func (j *journal) append(frame []byte) error {
	end := j.size + int64(len(frame))
	if end > j.alloc && j.prealloc > 0 {
		if err := j.extend(end); err != nil {
			return err
		}
	}
	if _, err := j.f.WriteAt(frame, j.size); err != nil {
		j.dirtyEnd = max(j.dirtyEnd, end)
		return fmt.Errorf("cursor journal %s: write checkpoint %d at byte %d: %w", j.name, j.nextSeq, j.size, err)
	}
	if j.dirtyEnd > end {
		if err := j.writeZeros(end, j.dirtyEnd); err != nil {
			return fmt.Errorf("cursor journal %s: zero bytes %d..%d after checkpoint %d: %w", j.name, end, j.dirtyEnd, j.nextSeq, err)
		}
	}
	if !j.noSync {
		if err := j.f.Sync(); err != nil {
			j.dirtyEnd = max(j.dirtyEnd, end)
			return &syncError{fmt.Errorf("cursor journal %s: fdatasync checkpoint %d: %w", j.name, j.nextSeq, err)}
		}
	}
	j.size, j.dirtyEnd = end, 0
	j.alloc = max(j.alloc, end)
	j.nextSeq++
	return nil
}

// Preallocation steps: an extension adds as many bytes as the file already
// holds, at least minPrealloc and at most Options.PreallocBytes, so a short
// lived journal (tests, a fresh server) stays small.
const (
	minPrealloc = 64 << 10
	zeroChunk   = 256 << 10
	pageSize    = 4096
)

var zeros = make([]byte, zeroChunk)

// writeZeros writes zeros over [from, to).
func (j *journal) writeZeros(from, to int64) error {
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := j.f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// extendAhead extends the file once less than half an extension of
// preallocated space is left. The writer calls it after releasing the waiters
// of a checkpoint, so the extension's write and sync (about 2.5 ms for 4 MiB on
// the benchmark machine) delay no caller that already wrote; append extends
// only when a frame does not fit at all.
//
// A failed extension is nobody's error: checkpoints go on into the space
// left, and the next attempt waits retryDelay (a full disk is not written to
// at every checkpoint). Errors: only a *syncError (sticky, see sticky).
func (j *journal) extendAhead() error {
	if j.prealloc == 0 || time.Now().Before(j.extendRetryAt) {
		return nil
	}
	step := min(max(j.alloc, minPrealloc), j.prealloc)
	if j.alloc-j.size >= step/2 {
		return nil
	}
	err := j.extend(j.size + 1)
	if err != nil && !sticky(err) {
		j.extendRetryAt = time.Now().Add(retryDelay)
		return nil
	}
	return err
}

// extend grows the file with written zeros until it holds at least need
// bytes, and syncs that once. Zeros must really be written: fallocate alone
// leaves unwritten extents whose conversion on the first overwrite is again a
// metadata commit at every fdatasync. When the disk cannot hold a whole
// extension it takes just the pages need asks for, so consumption goes on
// while a little space is left.
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
	err := j.fill(newAlloc)
	if err != nil && noSpace(err) && need > j.alloc {
		if small := (need + pageSize - 1) / pageSize * pageSize; small < newAlloc {
			err = j.fill(small)
		}
	}
	return err
}

// fill writes zeros from the preallocated end to newAlloc and syncs them.
func (j *journal) fill(newAlloc int64) error {
	// Reserve the blocks in one piece first (a hint: not every file system
	// supports it, and the zero writes below allocate anyway).
	_ = j.f.Allocate(j.alloc, newAlloc-j.alloc)
	if err := j.writeZeros(j.alloc, newAlloc); err != nil {
		return fmt.Errorf("cursor journal %s: preallocate bytes %d..%d: %w", j.name, j.alloc, newAlloc, err)
	}
	if !j.noSync {
		if err := j.f.Sync(); err != nil {
			return &syncError{fmt.Errorf("cursor journal %s: fdatasync preallocated bytes %d..%d: %w", j.name, j.alloc, newAlloc, err)}
		}
	}
	j.alloc = newAlloc
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
