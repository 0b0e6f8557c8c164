package commitlog

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// sparePrefix names prepared files not yet in use (spare-<n>.wal): each gets
// its own name, so preparing the next never touches one being renamed.
const sparePrefix = "spare-"

func spareName(n uint64) string { return fmt.Sprintf("%s%d.wal", sparePrefix, n) }

// walFile is one prepared file of the log.
type walFile struct {
	path   string // spareName until the first batch goes into it
	first  LSN    // 0 while a spare
	f      vfs.File
	format record.Format // batchFormat seeded with the file's salt
	// size is the preallocated bytes (zeros written and synced); it grows
	// (extend, under extendMu) once the zeros are durable.
	size     atomic.Int64
	extendMu sync.Mutex
	// end is where the next batch frame goes; written by the committer (and
	// Open), read by Read under the log's lock.
	end int64
	// reserved are the bytes promised to entries in batches not yet
	// written, from end on; under Log.mu.
	reserved int64
	synced   bool // every write to it so far is durable (committer)
	last     LSN  // last LSN written into it (0 = none)
}

func fileName(first LSN) string { return fmt.Sprintf("%016x.wal", uint64(first)) }

func parseFileName(name string) (LSN, bool) {
	s, ok := strings.CutSuffix(name, ".wal")
	if !ok || len(s) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return LSN(v), err == nil && v > 0
}

// zeros is what preparing a file writes.
var zeros = make([]byte, 256<<10)

// prepareFile creates path holding a header frame and zeros up to size,
// fdatasynced, and syncs the directory: afterwards writing a batch into it
// allocates nothing and changes no size. A file left by a failed attempt is
// removed.
func prepareFile(fsys vfs.FS, path string, size int64, noSync bool) (*walFile, error) {
	var saltb [8]byte
	if _, err := rand.Read(saltb[:]); err != nil {
		return nil, fmt.Errorf("commitlog: salt: %w", err)
	}
	h := fileHeader{salt: binary.LittleEndian.Uint64(saltb[:]), createdUs: time.Now().UnixMicro()}
	head := h.encode()
	size = max(size, int64(len(head))+frameOverhead)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, fmt.Errorf("commitlog: prepare %s: %w", path, err)
	}
	fail := func(err error) (*walFile, error) {
		f.Close()
		_ = fsys.Remove(path)
		return nil, fmt.Errorf("commitlog: prepare %s: %w", path, err)
	}
	_ = f.Allocate(0, size)
	if _, err := f.WriteAt(head, 0); err != nil {
		return fail(err)
	}
	for off := int64(len(head)); off < size; {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fail(err)
		}
		off += n
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
		if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
			return fail(err)
		}
	}
	w := &walFile{path: path, f: f, format: batchFormat.WithSeed(h.salt), end: int64(len(head))}
	w.size.Store(size)
	return w, nil
}

// growthQuantum rounds the fallback extension of a nearly full disk
// (bytes): small enough to fit in what is left, large enough that every
// append does not extend.
const growthQuantum = 64 << 10

func roundUp(n, q int64) int64 { return (n + q - 1) / q * q }

// extendSome extends w to want, or, when that fails (a disk without room
// for the doubling), to least: the doubling is only ahead of need, and
// refusing an append that fits would leave a broker unable to write even
// the checkpoint that lets its flush pass free space (issue 10: serving
// again once space is freed). The first error is returned when both fail.
func (w *walFile) extendSome(want, least int64, noSync bool) error {
	err := w.extend(want, noSync)
	if err == nil || least >= want {
		return err
	}
	if w.extend(least, noSync) == nil {
		return nil
	}
	return err
}

// room is how many more entry bytes a batch chunk may reserve in w: a new
// chunk needs frameOverhead on top of its entries, and tailGuard zeros stay
// after the last batch.
func (w *walFile) room() int64 { return w.size.Load() - w.end - w.reserved - tailGuard }

// tailGuard is how many zero bytes always follow a file's last batch: a
// batch never fills a file to its last byte, so a newest file that ends
// right after a batch was cut there (ErrShortFile), not filled.
const tailGuard = 1

// extend writes zeros from w's size up to size and fdatasyncs them, so that
// batches written there later change no file size. The new size becomes
// visible to appenders only once durable.
func (w *walFile) extend(size int64, noSync bool) error {
	w.extendMu.Lock()
	defer w.extendMu.Unlock()
	from := w.size.Load()
	if size <= from {
		return nil
	}
	_ = w.f.Allocate(from, size-from)
	for off := from; off < size; {
		n := min(int64(len(zeros)), size-off)
		if _, err := w.f.WriteAt(zeros[:n], off); err != nil {
			// Cut the partial extension back: a file never ends in a
			// half-written preallocation it does not know about.
			_ = w.f.Truncate(from)
			return fmt.Errorf("extend %s to %d bytes: %w", filepath.Base(w.path), size, err)
		}
		off += n
	}
	if !noSync {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("extend %s: %w", filepath.Base(w.path), err)
		}
	}
	w.size.Store(size)
	return nil
}
