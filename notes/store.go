package notes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// MaxTracesPerMessage caps the trace events one message keeps: an append past
// it fails with ErrTooManyTraces, so one chatty consumer cannot grow the store
// without bound between retention passes.
const MaxTracesPerMessage = 1000

// FileName is the store's file inside its directory.
const FileName = "log"

var (
	// ErrTooManyTraces: the message already holds MaxTracesPerMessage events.
	ErrTooManyTraces = errors.New("notes: trace limit per message reached")
	// ErrFailed: an earlier write or sync failed; the store refuses appends
	// until it is reopened (what reached the disk is unknown).
	ErrFailed = errors.New("notes: an earlier write failed")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("notes: closed")
)

// ErrCorrupt is matched by the *DamageError Open fails with when the file
// holds what a crash cannot leave: a damaged header, a verified record that
// does not decode, or damage with whole, verified records after it
// (acknowledged notes follow the damage). Nothing is cut and the broker does
// not start until a person looks (comb fsck names the bytes).
var ErrCorrupt = errors.New("notes: damaged record before acknowledged ones")

// Store is the notes of every partition (see doc.go). Safe for concurrent use.
type Store struct {
	fs   vfs.FS
	dir  string
	path string
	rf   record.Format // recordFormat seeded with the file's seed
	// noSync: Options.NoSync.
	noSync bool

	mu        sync.RWMutex
	f         vfs.File
	size      int64 // bytes of header and whole records in the file: where the next append lands
	liveBytes int64 // bytes of the records still live in memory
	failed    error
	parts     map[[16]byte]*partNotes
	byName    map[string][]*entry // in append order
	nDeleted  atomic.Int64        // tombstones held: 0 lets the pop path skip the lookup
	gen       atomic.Uint64       // tombstones added or pruned so far: a cache of what they hide is stale when it moved

	syncMu sync.Mutex
	synced int64 // file bytes known durable
}

type partNotes struct {
	deleted map[uint64]struct{}
	traces  map[uint64][]*entry // per message, in append order
}

type entry struct {
	Trace
	size int  // framed bytes in the file
	dead bool // pruned: byName lists drop it lazily
}

// OpenReport says what Open repaired.
type OpenReport struct {
	Records  int    // whole records read
	Tail     string // what followed them: "" (nothing), or record.Tail's words for what was cut
	CutBytes int64  // bytes cut from the end of the file
	KeptAt   string // where the cut bytes were copied ("" when only zeros were cut)
}

// Options configures a Store.
type Options struct {
	// QuarantineDir receives the bytes Open cuts ("" = the store's directory).
	QuarantineDir string
	// NoSync skips every fdatasync (the broker's --sync never): appends are
	// then durable only once the OS writes them back.
	NoSync bool
}

// Open opens (creating) the store in dir on fsys and loads it. What follows
// the last whole record is classified by package record's tail rule: a torn
// or damaged tail with nothing verified after it is copied to
// opts.QuarantineDir/log.from-<byte> and cut (reported); damage with verified
// records after it, a damaged header or a record that does not decode fails
// with a *DamageError (errors.Is ErrCorrupt) and changes nothing. Check
// reads the file with the same code and changes nothing.
func Open(fsys vfs.FS, dir string, opts Options) (*Store, OpenReport, error) {
	quarantineDir := opts.QuarantineDir
	s := &Store{fs: fsys, dir: dir, path: filepath.Join(dir, FileName), noSync: opts.NoSync,
		parts: make(map[[16]byte]*partNotes), byName: make(map[string][]*entry)}
	var rep OpenReport
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, rep, fmt.Errorf("notes: %w", err)
	}
	_ = fsys.Remove(s.path + ".tmp") // a rewrite a crash interrupted; the old file is whole
	data, err := fsys.ReadFile(s.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, rep, fmt.Errorf("notes: %w", err)
	}
	l, err := load(s.path, data, s.applyLocked)
	if err != nil {
		return nil, rep, err
	}
	if l.recreate {
		return s, rep, s.create()
	}
	s.rf = recordFormat.WithSeed(l.seed)
	rep.Records = l.sc.Frames
	end := l.end
	if l.cut() {
		rep.Tail, rep.CutBytes = l.sc.Tail.String(), int64(len(data))-end
		if l.sc.Lost() {
			if rep.KeptAt, err = s.keep(quarantineDir, data[end:int64(l.hlen)+l.sc.DataEnd], end); err != nil {
				return nil, rep, err
			}
		}
	}
	f, err := fsys.OpenFile(s.path, os.O_RDWR)
	if err != nil {
		return nil, rep, fmt.Errorf("notes: %w", err)
	}
	if end < int64(len(data)) {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, rep, fmt.Errorf("notes: %s: cut at byte %d: %w", s.path, end, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, rep, fmt.Errorf("notes: %s: %w", s.path, err)
		}
	}
	s.f, s.size, s.synced = f, end, end
	return s, rep, nil
}

// create writes a new file holding only a header with a fresh seed, durable
// (file and directory entry) before any record is appended to it.
func (s *Store) create() error {
	hdr, seed, err := newHeader()
	if err != nil {
		return err
	}
	f, err := s.fs.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("notes: %w", err)
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return fmt.Errorf("notes: %s: %w", s.path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("notes: %s: %w", s.path, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		f.Close()
		return fmt.Errorf("notes: %s: %w", s.dir, err)
	}
	s.rf = recordFormat.WithSeed(seed)
	s.f, s.size, s.synced = f, int64(len(hdr)), int64(len(hdr))
	return nil
}

// keep copies bytes Open is about to cut (from byte at of the file) to the
// quarantine directory and returns the copy's path.
func (s *Store) keep(quarantineDir string, b []byte, at int64) (string, error) {
	if quarantineDir == "" {
		quarantineDir = s.dir
	}
	name := filepath.Join(quarantineDir, fmt.Sprintf("%s.from-%d", FileName, at))
	if err := s.fs.MkdirAll(quarantineDir); err != nil {
		return "", fmt.Errorf("notes: quarantine: %w", err)
	}
	if err := vfs.WriteFileAtomic(s.fs, name, b, false); err != nil {
		return "", fmt.Errorf("notes: quarantine %s: %w", name, err)
	}
	return name, nil
}

// applyLocked adds a decoded record of n framed bytes to memory. A repeated
// tombstone is harmless; a trace past the cap (possible only in a file that
// another build wrote) is kept: the cap is enforced on append.
func (s *Store) applyLocked(rec noteRecord, n int) {
	pn := s.parts[rec.ref.Partition]
	if pn == nil {
		pn = &partNotes{}
		s.parts[rec.ref.Partition] = pn
	}
	if rec.trace == nil {
		if pn.deleted == nil {
			pn.deleted = make(map[uint64]struct{})
		}
		if _, dup := pn.deleted[rec.ref.Offset]; dup {
			return // its bytes are dead from the start
		}
		pn.deleted[rec.ref.Offset] = struct{}{}
		s.nDeleted.Add(1)
		s.gen.Add(1)
		s.liveBytes += int64(n)
		return
	}
	e := &entry{Trace: *rec.trace, size: n}
	if pn.traces == nil {
		pn.traces = make(map[uint64][]*entry)
	}
	pn.traces[rec.ref.Offset] = append(pn.traces[rec.ref.Offset], e)
	for _, name := range e.Names {
		s.byName[name] = append(s.byName[name], e)
	}
	s.liveBytes += int64(n)
}

// Apply writes one note body (EncodeTombstone, EncodeTrace) to the file,
// without syncing it, and to memory. A note already held (a tombstone of the
// same message, a trace event of the same id: a commit-log entry replayed
// after a crash) changes nothing and reports false. Errors: the body does not
// decode, ErrTooManyTraces, ErrFailed, ErrClosed, or the write's I/O error.
func (s *Store) Apply(body []byte) (bool, error) {
	rec, err := decodeBody(body)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pn := s.parts[rec.ref.Partition]; pn != nil {
		if rec.trace == nil {
			if _, ok := pn.deleted[rec.ref.Offset]; ok {
				return false, nil
			}
		} else {
			es := pn.traces[rec.ref.Offset]
			for _, e := range es {
				if e.ID == rec.trace.ID {
					return false, nil
				}
			}
			if len(es) >= MaxTracesPerMessage {
				return false, ErrTooManyTraces
			}
		}
	}
	if _, err := s.appendLocked(rec, body); err != nil {
		return false, err
	}
	return true, nil
}

// Sync makes every note applied so far durable (fdatasync, unless NoSync).
func (s *Store) Sync() error { return s.syncTo(s.sizeNow()) }

// TraceCount is how many trace events ref holds.
func (s *Store) TraceCount(ref MessageRef) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if pn := s.parts[ref.Partition]; pn != nil {
		return len(pn.traces[ref.Offset])
	}
	return 0
}

// Delete records a tombstone for ref and returns once it is durable. It
// reports whether ref was not deleted before.
func (s *Store) Delete(ref MessageRef) (bool, error) {
	added, err := s.Apply(EncodeTombstone(ref))
	if err != nil {
		return false, err
	}
	return added, s.Sync() // a repeat may still be on its way to the disk
}

// AddTrace records t and returns once it is durable. Errors: as Apply.
func (s *Store) AddTrace(t Trace) error {
	if _, err := s.Apply(EncodeTrace(&t)); err != nil {
		return err
	}
	return s.Sync()
}

// appendLocked writes one record at the end of the file and applies it to
// memory; it returns the file size to sync to. A failed write is cut back so
// that no partial record stays in front of the next one.
func (s *Store) appendLocked(rec noteRecord, body []byte) (int64, error) {
	if s.f == nil {
		return 0, ErrClosed
	}
	if s.failed != nil {
		return 0, fmt.Errorf("%w: %w", ErrFailed, s.failed)
	}
	framed, err := s.rf.Append(nil, body)
	if err != nil {
		return 0, fmt.Errorf("notes: %w", err)
	}
	if _, err := s.f.WriteAt(framed, s.size); err != nil {
		if terr := s.f.Truncate(s.size); terr != nil {
			s.failed = terr
		}
		return 0, fmt.Errorf("notes: %s: append at byte %d: %w", s.path, s.size, err)
	}
	s.size += int64(len(framed))
	s.applyLocked(rec, len(framed))
	return s.size, nil
}

func (s *Store) sizeNow() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.size
}

// syncTo returns once the file's first end bytes are durable. Appends that
// wait together share one fdatasync: the first to take syncMu syncs
// everything written so far.
func (s *Store) syncTo(end int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced >= end {
		return nil
	}
	s.mu.RLock()
	f, target, failed := s.f, s.size, s.failed
	s.mu.RUnlock()
	if failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, failed)
	}
	if f == nil {
		return ErrClosed
	}
	if s.noSync {
		s.synced = target
		return nil
	}
	if err := f.Sync(); err != nil {
		s.mu.Lock()
		s.failed = err
		s.mu.Unlock()
		return fmt.Errorf("notes: %s: sync: %w", s.path, err)
	}
	s.synced = target
	return nil
}

// Close closes the file; every acknowledged append is already durable.
func (s *Store) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
