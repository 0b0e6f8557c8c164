package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// JournalFile is the journal's name in the meta directory.
const JournalFile = "journal"

// More errors.
var (
	// ErrCorrupt is wrapped by OpenJournal (and reported by Read) when the
	// journal is damaged somewhere other than its tail: a frame fails its
	// checks with a valid frame after it, or a frame passes its checksum but
	// does not decode. Cutting there would forget every queue and partition
	// registered later, so nothing is changed and the broker does not start.
	ErrCorrupt = errors.New("meta: metadata journal damaged")
)

// Options configure OpenJournal.
type Options struct {
	FS     vfs.FS // nil = vfs.OS
	NoSync bool   // skip fsyncs (tests and benchmarks only)
	// QuarantineDir receives the bytes a cut tail held; "" = the directory
	// ../quarantine/meta next to the journal's directory.
	QuarantineDir string
}

func (o Options) fs() vfs.FS {
	if o.FS == nil {
		return vfs.OS
	}
	return o.FS
}

// Replay is what OpenJournal found and did.
type Replay struct {
	Records []Record
	// Tail is what followed the last valid record (record.TailClean when
	// nothing did); TailTorn and TailDamaged were cut at CutAt after their
	// CutBytes non-zero bytes were copied to KeptAt.
	Tail     record.Tail
	CutAt    int64
	CutBytes int64
	KeptAt   string
	// UpgradedFrom is 1 when a version 1 journal was rewritten in this format
	// (the old file kept as journal.v1), else 0.
	UpgradedFrom int
}

// Journal is the metadata journal as OpenJournal recovered it, open until
// Close. Nothing is appended to it: metadata changes are commit-log entries,
// and the broker's flush pass replaces the whole file with a snapshot
// (WriteJournal).
type Journal struct {
	mu   sync.Mutex
	fsys vfs.FS
	f    vfs.File
	path string
}

// OpenJournal opens (creating if missing) the journal in dir and decodes every
// record, applying the tail rule of the package comment: a torn or damaged
// tail is copied to the quarantine directory, cut and reported; damage before
// a valid frame returns an error wrapping ErrCorrupt and changes nothing. A
// version 1 journal is upgraded in place.
//
// Errors: ErrCorrupt (wrapped with the path and byte range), or the file
// system's, wrapped with the path.
func OpenJournal(dir string, opts Options) (*Journal, *Replay, error) {
	fsys := opts.fs()
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, nil, fmt.Errorf("metadata journal: %w", err)
	}
	path := filepath.Join(dir, JournalFile)
	data, err := fsys.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("metadata journal %s: %w", path, err)
	}
	rep := &Replay{}
	if isLegacy(data) {
		if data, err = upgradeLegacy(fsys, path, data, opts.NoSync); err != nil {
			return nil, nil, err
		}
		rep.UpgradedFrom = 1
	}
	sc, recs, err := scanJournal(path, data)
	if err != nil {
		return nil, nil, err
	}
	rep.Records, rep.Tail = recs, sc.Tail
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, nil, fmt.Errorf("metadata journal %s: %w", path, err)
	}
	j := &Journal{fsys: fsys, f: f, path: path}
	if err := j.cutTail(sc, data, opts, rep); err != nil {
		f.Close()
		return nil, nil, err
	}
	if data == nil && !opts.NoSync {
		// A new journal: its name, and the meta directory's own entry (made
		// by MkdirAll above on a fresh data directory), must survive.
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := fsys.SyncDir(d); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("metadata journal %s: %w", path, err)
			}
		}
	}
	return j, rep, nil
}

// scanJournal decodes data's records and refuses damage that is not a tail.
func scanJournal(path string, data []byte) (record.Scan, []Record, error) {
	var recs []Record
	sc, err := JournalFormat.Scan(data, func(pos int64, body []byte) error {
		r, err := decodeRecord(body)
		if err != nil {
			return err
		}
		recs = append(recs, r)
		return nil
	})
	switch {
	case err != nil:
		return sc, recs, fmt.Errorf("metadata journal %s: the record at byte %d passes its checksum but does not decode (a newer format or a bug, not a torn write): %v: %w", path, sc.End, err, ErrCorrupt)
	case sc.Tail == record.TailCorrupt:
		return sc, recs, fmt.Errorf("metadata journal %s: bytes [%d,%d) are damaged and valid records follow them (not a torn tail; cutting would forget later queues and partitions; run comb fsck): %w", path, sc.End, sc.Resync, ErrCorrupt)
	}
	return sc, recs, nil
}

// cutTail keeps the non-zero bytes after the valid records in quarantine and
// cuts the file there (then syncs the cut, so nothing is appended after bytes
// a crash could bring back).
func (j *Journal) cutTail(sc record.Scan, data []byte, opts Options, rep *Replay) error {
	if sc.End == int64(len(data)) {
		return nil
	}
	if sc.Lost() {
		qdir := opts.QuarantineDir
		if qdir == "" {
			qdir = filepath.Join(filepath.Dir(filepath.Dir(j.path)), layout.Quarantine, layout.Meta)
		}
		kept := filepath.Join(qdir, fmt.Sprintf("journal-%d-%d.tail", sc.End, time.Now().UnixMicro()))
		if err := j.fsys.MkdirAll(qdir); err != nil {
			return fmt.Errorf("metadata journal %s: quarantine: %w", j.path, err)
		}
		// The journal is not preallocated: zeros in its tail are bytes of
		// the record too, so everything from the cut on is kept.
		if err := vfs.WriteFileAtomic(j.fsys, kept, data[sc.End:], opts.NoSync); err != nil {
			return fmt.Errorf("metadata journal %s: quarantine the tail before cutting it: %w", j.path, err)
		}
		rep.CutAt, rep.CutBytes, rep.KeptAt = sc.End, int64(len(data))-sc.End, kept
	}
	if err := j.f.Truncate(sc.End); err != nil {
		return fmt.Errorf("metadata journal %s: cut the tail at byte %d: %w", j.path, sc.End, err)
	}
	if !opts.NoSync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("metadata journal %s: %w", j.path, err)
		}
	}
	return nil
}

// Close closes the file. Safe on a nil Journal and more than once.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
