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
	"github.com/combmq/comb/segment/dedup"
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
	// unsyncedFrom is the first offset appended that no successful sync
	// covers yet, 0 when every appended offset is covered (under mu; see
	// DurableNext).
	unsyncedFrom uint64

	syncMu      sync.Mutex  // held by Sync and by rotation's handle swap
	failure     error       // first failed fdatasync, or failed append that could not be cut back; sticky (under syncMu, read via failed)
	failedFlag  atomic.Bool // failure != nil, readable without syncMu
	needDirSync bool        // a file was created since the last directory sync (under syncMu)
	// pending holds the handles of files sealed by a rotation that did not
	// sync them (Options.DeferRotationSync), oldest first, until a sync
	// covers them; fdatasync must go through the handle that was open when
	// the pages were written (a later open may not see a writeback error).
	// Changed with syncMu and mu held; read under either.
	pending   []pendingFile
	sealedSeq uint64      // rotations that left a file pending, ever (under syncMu and mu)
	marked    atomic.Bool // in its Committer's marked set (Mark, Flush)

	appendSeq atomic.Uint64 // segments appended
	syncedSeq atomic.Uint64 // appendSeq covered by the last successful Sync

	dedup dedup.Index // package dedup; dedup_log.go is the seam

	// Handle state (handles.go): pins count operations using handles,
	// hstate says whether they are open, loadMu serialises load and release.
	cache      *HandleCache
	loadMu     sync.Mutex
	pins       atomic.Int32
	hstate     atomic.Uint32
	referenced atomic.Bool // CLOCK bit, cleared by the cache's sweep
	used       atomic.Bool // idle bit, cleared by TakeUsed
	unlisted   bool        // opened from a Summary: the directory is not read yet (under loadMu)
	lazyFirst  uint64      // FirstOffset while unlisted
	lazyActive uint64      // Summary.ActiveBase while unlisted
	handles    int         // handles counted in cache (under cache.mu)
	slot       int         // index in cache.ring (clockRing), -1 when absent (under cache.mu)
	dref       atomic.Bool // dedup CLOCK bit (dedup_budget.go), set by every dedup use (dedup.Config.Touch)
	dbytes     int64       // dedup bytes counted in cache (under cache.mu)
	dslot      int         // index in cache.dring (clockRing), -1 when absent (under cache.mu)
}

// fileInfo is what the Log remembers about one segment file without opening it.
type fileInfo struct {
	base            uint64 // first offset (the file name)
	next            uint64 // offset after its last record (== base when empty)
	size            int64  // bytes of whole, published segments
	firstTs, lastTs int64  // segment timestamps of its first and last segment (µs)

	// The index: in its file (idxOnDisk), or, for a small active file, in
	// heap (lazyindex.go). Guarded like the file's openFile (mu, loadMu).
	idxOnDisk bool
	heap      *heapBacking
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
// a torn tail (partial header, short payload, checksum mismatch with no whole
// segment after it) is truncated to the last whole segment, what was cut
// reported in the RecoveryReport. Damage in the newest file that a whole,
// checksum-valid segment follows is not a torn write (issue 5: acknowledged
// data is never dropped silently): Open refuses with a *CorruptionError
// (errors.Is ErrCorrupt) naming the file, the damaged byte range and its
// offsets, and changes nothing. Only the tail after the last indexed segment
// is read in the common case; the resync scan runs only once damage is found.
// The other files' indexes are checked against their last segment header and
// rebuilt (with a full checksum scan of that file) when missing, torn or
// stale; damage found that way in a sealed file is a *CorruptionError too.
// A gap in the offsets between two files is refused unless the partition's
// QUARANTINE marker (quarantine.go) lists it. Verify scans everything.
func Open(dir string, opts Options) (*Log, *RecoveryReport, error) {
	return openLog(opts.fsOf(), dir, opts)
}

func openLog(fsys fileSystem, dir string, opts Options) (*Log, *RecoveryReport, error) {
	return openLogReport(fsys, dir, opts, &RecoveryReport{})
}

// openLogReport is Open adding to rep (OpenFrom has filled part of it).
func openLogReport(fsys fileSystem, dir string, opts Options, rep *RecoveryReport) (*Log, *RecoveryReport, error) {
	l := newLog(fsys, dir, opts)
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A new log: its directory's name must be durable before the first
		// acknowledged append in it is (the append's sync covers only the
		// file and, once, the directory's entries).
		if err = mkdirDurable(fsys, dir); err == nil {
			names, err = []string{}, nil
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	rep, err = l.listAndOpenNames(rep, names)
	if err != nil {
		return nil, rep, err
	}
	if l.active != nil {
		l.cache.adjust(l, 2)
	}
	return l, rep, nil
}

func newLog(fsys fileSystem, dir string, opts Options) *Log {
	l := &Log{dir: dir, opts: opts.withDefaults(), fs: fsys, slot: -1, dslot: -1}
	l.cache = l.opts.Handles
	l.initDedup()
	return l
}

// listAndOpen reads the directory, opens and checks every file (see Open)
// and leaves the newest one open as the active file. Called with loadMu held
// before the Log is shared, or by load while no operation is using it.
func (l *Log) listAndOpen(rep *RecoveryReport) (*RecoveryReport, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return rep, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	return l.listAndOpenNames(rep, names)
}

// listAndOpenNames is listAndOpen with the directory's names already read.
func (l *Log) listAndOpenNames(rep *RecoveryReport, names []string) (*RecoveryReport, error) {
	dir, fsys := l.dir, l.fs
	var err error
	if l.dev, err = fsys.Device(dir); err != nil {
		return rep, fmt.Errorf("segment log %s: %w", dir, err)
	}
	var files []*fileInfo
	indexed := map[uint64]bool{}
	for _, n := range names {
		if base, ok := parseSegName(n); ok {
			files = append(files, &fileInfo{base: base, next: base})
		} else if s, ok := strings.CutSuffix(n, ".idx"); ok {
			if base, ok := parseSegName(s + ".seg"); ok {
				indexed[base] = true
			}
		}
	}
	for _, fi := range files {
		fi.idxOnDisk = indexed[fi.base]
	}
	var active *openFile
	var quarantined []OffsetRange
	quarantineRead := false
	for i, fi := range files {
		last := i == len(files)-1
		of, err := l.openFileInfo(fi, last, true, last, rep)
		if err != nil {
			return rep, fmt.Errorf("segment log %s: %w", dir, err)
		}
		if last {
			of.refs.Store(1)
			active = of
		} else {
			of.close(false)
			nb := files[i+1].base
			if fi.next < nb && !quarantineRead {
				quarantineRead = true
				if quarantined, err = readQuarantineFS(fsys, dir); err != nil {
					return rep, fmt.Errorf("segment log %s: %w", dir, err)
				}
			}
			if fi.next < nb && QuarantineCovers(quarantined, fi.next, nb-1) {
				continue // moved aside by fsck --repair: Read and the lookups skip it
			}
			if fi.next != nb {
				return rep, fmt.Errorf("segment log %s: %w", dir, &CorruptionError{
					File: join(dir, segName(fi.base)), StartByte: fi.size, EndByte: fi.size,
					FirstOffset: min(fi.next, nb), LastOffset: max(fi.next, nb) - 1,
					Reason: fmt.Sprintf("file ends before offset %d but the next file starts at %d (no %s marker covers the gap)", fi.next, nb, QuarantineFileName)})
			}
		}
	}
	next, lastTs := uint64(1), int64(0)
	if n := len(files); n > 0 {
		next = files[n-1].next
		for i := n - 1; i >= 0; i-- {
			if files[i].next > files[i].base {
				lastTs = files[i].lastTs
				break
			}
		}
	} else if l.unlisted {
		// Every file is gone (removed by hand): keep the offsets, a new file
		// starts where the log ended.
		next, lastTs = l.next, l.lastTs
	}
	l.mu.Lock()
	l.files, l.active, l.next, l.lastTs = files, active, next, lastTs
	l.unlisted = false
	l.mu.Unlock()
	l.dedup.SetOpenNext(next)
	return rep, nil
}

// Summary is what a Log must know about itself to answer FirstOffset,
// NextOffset and LastTimestamp without reading its directory: the broker
// records one per partition at a clean shutdown (issue 7: start-up reads
// O(partitions) bytes, not the data).
//
// ActiveBase and Stamp let the next start check, with two stats, that the
// files are still the ones the Summary describes (see Stamp in stamp.go).
type Summary struct {
	FirstOffset, NextOffset uint64
	LastTimestampMicros     int64
	ActiveBase              uint64 // first offset (name) of the newest segment file; 0 = no file
	Stamp                   uint64 // Stamp(dir, s) when the Summary was taken; 0 = none (never trusted)
}

// Summary returns l's current Summary.
func (l *Log) Summary() Summary {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := Summary{FirstOffset: l.firstLocked(), NextOffset: l.next, LastTimestampMicros: l.lastTs, ActiveBase: l.lazyActive}
	if !l.unlisted {
		s.ActiveBase = 0
		if n := len(l.files); n > 0 {
			s.ActiveBase = l.files[n-1].base
		}
	}
	return s
}

// OpenSummary returns a Log for dir that reads nothing until its first use
// that needs the files (Append, Read, the time lookups, FindTransaction,
// DeleteFilesBefore), which then opens it as Open does, torn-tail repair
// included. Until then FirstOffset, NextOffset and LastTimestamp answer from
// s. s must describe the directory as a clean Close left it; if the files say
// otherwise at the first use, the files win.
func OpenSummary(dir string, opts Options, s Summary) *Log {
	l := newLog(opts.fsOf(), dir, opts)
	l.unlisted = true
	l.next, l.lastTs, l.lazyFirst = max(s.NextOffset, 1), s.LastTimestampMicros, s.FirstOffset
	l.lazyActive = s.ActiveBase
	l.hstate.Store(hReleased)
	return l
}

// closeAll drops every handle (Open failure and Close).
func (l *Log) closeAll() {
	l.closePendingLocked()
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
	// An in-memory index is always cut to its entries: it outlives the
	// openFile (fileInfo.heap) and should cost 32 bytes a segment, not its
	// growth capacity.
	_ = of.idx.Close(shrink || of.info.heap != nil)
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
	of, err := l.openFileInfo(fi, false, false, false, nil)
	if err != nil {
		return nil, err
	}
	of.refs.Store(2) // the cache slot and the caller
	if old := l.sealed; old != nil {
		old.unref()
	} else {
		l.cache.adjust(l, 2)
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
	if l.unlisted {
		return min(max(l.lazyFirst, 1), l.next)
	}
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
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	err := l.dedup.Drop()
	if serr := l.syncNow(nil); err == nil && !errors.Is(serr, fs.ErrClosed) {
		err = serr
	}
	l.syncMu.Lock() // closeAll drops the pending handles a racing Sync reads under syncMu
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.active; a != nil && a.info.heap != nil && lazyIndexDue(a.idx.Len(), a.info.size) {
		_ = l.writeIndexLocked(a) // only after an earlier attempt failed; Open retries too
	}
	l.closeAll()
	l.cache.forget(l)
	return err
}
