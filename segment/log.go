package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/index"
)

// Log is one partition's append-only log: a directory of segment files, each
// with a mapped segment index, plus a lazily loaded dedup index.
//
// Concurrency: Append, Sync, Read, the lookups and FindTransaction may run
// concurrently, but Append must not run concurrently with itself nor with
// DeleteFilesBefore or Close (the caller holds the partition lock). The
// writer builds and writes a segment without the lock, then publishes it
// (index entry, file size, next offset) under mu; readers take mu shared and
// never look past the published end, so they see whole segments only.
//
// Memory: an idle Log holds its file list (~64 bytes a file), the active
// file's handle and index mapping, and nothing else until FindTransaction
// loads the dedup table (16 bytes a slot).
type Log struct {
	dir  string
	opts Options
	fs   fileSystem
	dev  uint64 // file system device, for the Committer's SyncFS grouping

	mu       sync.RWMutex
	files    []*fileInfo // sorted by base; the last is the active file
	active   *openFile   // the last file, open for append; nil until the first Append of a new log
	sealed   *openFile   // one cached sealed file for reads (the handle-cache seam), guarded by handleMu
	handleMu sync.Mutex
	closed   atomic.Bool

	// written by Append only (single writer), read under mu
	next   uint64 // next offset to assign
	lastTs int64

	syncMu      sync.Mutex // held by Sync and by rotation's handle swap
	needDirSync bool       // a file was created since the last directory sync (under syncMu)

	appendSeq atomic.Uint64 // segments appended
	syncedSeq atomic.Uint64 // appendSeq covered by the last successful Sync

	dedup dedupState
}

// fileInfo is what the Log remembers about one segment file without opening it.
type fileInfo struct {
	base            uint64 // first offset (the file name)
	next            uint64 // offset after its last record (== base when empty)
	size            int64  // bytes of whole, published segments
	firstTs, lastTs int64  // segment timestamps of its first and last segment (µs)
}

// openFile is an open segment file with its mapped index. refs counts users:
// the Log's slot (active or sealed cache) holds one, each reader one more.
type openFile struct {
	info *fileInfo
	seg  file
	idx  *index.File
	refs atomic.Int32
}

func segName(base uint64) string { return fmt.Sprintf("%020d.seg", base) }
func idxName(base uint64) string { return fmt.Sprintf("%020d.idx", base) }

// dedupFileName is the dedup index file in a partition directory.
const dedupFileName = "dedup.idx"

func parseSegName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v > 0
}

// Open opens the log in dir, creating dir when missing, and recovers it:
// the newest file's tail is verified from its last indexed segment onward and
// a torn or corrupt tail is truncated to the last whole segment (reported in
// the RecoveryReport); the other files' indexes are checked against their
// last segment header and rebuilt (with a full checksum scan of that file)
// when missing, torn or stale. Damage found in a sealed file returns a
// *CorruptionError (errors.Is ErrCorrupt); Verify scans everything.
func Open(dir string, opts Options) (*Log, *RecoveryReport, error) {
	return openLog(osFS{}, dir, opts)
}

func openLog(fsys fileSystem, dir string, opts Options) (*Log, *RecoveryReport, error) {
	l := &Log{dir: dir, opts: opts.withDefaults(), fs: fsys}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	if l.dev, err = fsys.Device(dir); err != nil {
		return nil, nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	rep := &RecoveryReport{}
	for _, n := range names {
		if base, ok := parseSegName(n); ok {
			l.files = append(l.files, &fileInfo{base: base, next: base})
		}
	}
	for i, fi := range l.files {
		last := i == len(l.files)-1
		of, err := l.openFileInfo(fi, last, true, rep)
		if err != nil {
			l.closeAll()
			return nil, rep, fmt.Errorf("segment log %s: %w", dir, err)
		}
		if last {
			of.refs.Store(1)
			l.active = of
		} else {
			of.close(false)
			if nb := l.files[i+1].base; fi.next != nb {
				l.closeAll()
				return nil, rep, fmt.Errorf("segment log %s: %w", dir, &CorruptionError{
					File: join(dir, segName(fi.base)), StartByte: fi.size, EndByte: fi.size,
					FirstOffset: min(fi.next, nb), LastOffset: max(fi.next, nb) - 1,
					Reason: fmt.Sprintf("file ends before offset %d but the next file starts at %d", fi.next, nb)})
			}
		}
	}
	l.next = 1
	defer func() { l.dedup.openNext = l.next }()
	if n := len(l.files); n > 0 {
		l.next = l.files[n-1].next
		for i := n - 1; i >= 0; i-- {
			if l.files[i].next > l.files[i].base {
				l.lastTs = l.files[i].lastTs
				break
			}
		}
	}
	return l, rep, nil
}

// closeAll drops every handle (Open failure and Close).
func (l *Log) closeAll() {
	if l.active != nil {
		l.active.close(true)
		l.active = nil
	}
	if l.sealed != nil {
		l.sealed.unref()
		l.sealed = nil
	}
}

func (of *openFile) close(shrink bool) {
	_ = of.idx.Close(shrink)
	_ = of.seg.Close()
}

func (of *openFile) unref() {
	if of.refs.Add(-1) == 0 {
		of.close(false)
	}
}

// acquireLocked returns fi's open file with a reference the caller must drop
// with unref. mu must be held (shared is enough): sealed-cache swaps are
// serialised by l.handleMu. This is the seam the handle LRU replaces: today
// it keeps at most one sealed file open besides the active one.
func (l *Log) acquireLocked(fi *fileInfo) (*openFile, error) {
	if l.active != nil && l.active.info == fi {
		l.active.refs.Add(1)
		return l.active, nil
	}
	l.handleMu.Lock()
	defer l.handleMu.Unlock()
	if s := l.sealed; s != nil && s.info == fi {
		s.refs.Add(1)
		return s, nil
	}
	of, err := l.openFileInfo(fi, false, false, nil)
	if err != nil {
		return nil, err
	}
	of.refs.Store(2) // the cache slot and the caller
	if old := l.sealed; old != nil {
		old.unref()
	}
	l.sealed = of
	return of, nil
}

// FirstOffset is the oldest retained offset; == NextOffset() when the log is empty.
func (l *Log) FirstOffset() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstLocked()
}

func (l *Log) firstLocked() uint64 {
	for _, fi := range l.files {
		if fi.next > fi.base {
			return fi.base
		}
	}
	return l.next
}

// NextOffset is the high-water mark + 1: the offset the next Append assigns
// (1 for a never-written log).
func (l *Log) NextOffset() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.next
}

// LastTimestamp is the segment timestamp (µs) of the newest segment; 0 when empty.
func (l *Log) LastTimestamp() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lastTs
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// Close flushes the dedup index, syncs the active file (so a clean shutdown
// loses nothing whatever the sync policy), shrinks its index to its entries
// and releases every handle. Further calls return ErrClosed. It must not run
// concurrently with Append.
func (l *Log) Close() error {
	if l.closed.Swap(true) {
		return ErrClosed
	}
	err := l.dedupFlush()
	if serr := l.syncNow(); err == nil && !errors.Is(serr, fs.ErrClosed) {
		err = serr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeAll()
	return err
}
