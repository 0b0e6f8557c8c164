package streams

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/google/uuid"
)

// The two framed file kinds (doc.go). One frame a file: a snapshot is as
// large as its shard's live state, bounded by record's 1 GiB body.
var (
	RegistryFormat = record.NewFormat("CSRG", 1<<30)
	SnapshotFormat = record.NewFormat("CSSN", 1<<30)
)

// Dir is the name of the store's directory under the data directory, and
// RegistryFile the registry's file name in it.
const (
	Dir          = "streams"
	RegistryFile = "queries"
)

// FileError is damage to one of the store's files: a checksum or a body
// that does not decode. Nothing is cut or guessed: the file needs comb fsck.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("streams: %s: %v", e.File, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Files reads and writes the store's files under Root (<data>/streams).
// Writes are serialised (mu), so a flush writing a snapshot and a reset
// removing it never interleave.
type Files struct {
	FS     vfs.FS
	Root   string
	NoSync bool // tests and benchmarks only
	// SyncFS lets WriteSnapshots sync many temp files with one syncfs(2)
	// (only where vfs.SyncFSTrusted; broker Config.FlushSyncFS); otherwise
	// each is fsynced through its own descriptor.
	SyncFS bool
	mu     sync.Mutex
}

// ShardPath is the snapshot file of k.
func (f *Files) ShardPath(k ShardKey) string {
	return filepath.Join(f.Root, uuid.UUID(k.Query).String(), uuid.UUID(k.Partition).String())
}

// Loaded is what Load read from disk.
type Loaded struct {
	Registry  Registry
	HasReg    bool
	Snapshots []Snapshot
	Paths     []string // Paths[i] is Snapshots[i]'s file
	// Leftovers is the ".tmp" files found: writes cut by a crash (the old file, if any, is
	// intact). Load leaves them, so that a reader of a live server's directory (comb dump, comb
	// fsck) never removes a file the server is writing; the server's start-up removes them.
	Leftovers []string
}

// Load reads the registry file and every snapshot, verifying each, and lists
// the leftover ".tmp" files in Loaded.Leftovers. It writes nothing. A missing
// directory is an empty store.
//
// Errors: *FileError for a damaged file, the file system's otherwise.
func (f *Files) Load() (Loaded, error) {
	var l Loaded
	body, err := RegistryFormat.ReadFile(f.FS, filepath.Join(f.Root, RegistryFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return l, &FileError{File: filepath.Join(f.Root, RegistryFile), Err: err}
	default:
		if l.Registry, err = DecodeRegistry(body); err != nil {
			return l, &FileError{File: filepath.Join(f.Root, RegistryFile), Err: err}
		}
		l.HasReg = true
	}
	names, err := f.FS.List(f.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("streams: %w", err)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == RegistryFile {
			continue
		}
		if strings.HasSuffix(n, ".tmp") {
			l.Leftovers = append(l.Leftovers, filepath.Join(f.Root, n))
			continue
		}
		if err := f.loadQueryDir(&l, filepath.Join(f.Root, n)); err != nil {
			return l, err
		}
	}
	return l, nil
}

// loadQueryDir reads the snapshots of one query's directory.
func (f *Files) loadQueryDir(l *Loaded, dir string) error {
	files, err := f.FS.List(dir)
	if err != nil {
		return fmt.Errorf("streams: %w", err)
	}
	sort.Strings(files)
	for _, n := range files {
		p := filepath.Join(dir, n)
		if strings.HasSuffix(n, ".tmp") {
			l.Leftovers = append(l.Leftovers, p)
			continue
		}
		s, err := ReadSnapshotFile(f.FS, p)
		if err != nil {
			return err
		}
		l.Snapshots = append(l.Snapshots, s)
		l.Paths = append(l.Paths, p)
	}
	return nil
}

// ReadSnapshotFile reads and decodes one snapshot file; its name must be
// the partition id it holds, and its directory's the query id.
//
// Errors: *FileError for damage, the file system's otherwise.
func ReadSnapshotFile(fsys vfs.FS, path string) (Snapshot, error) {
	body, err := SnapshotFormat.ReadFile(fsys, path)
	if err != nil {
		return Snapshot{}, &FileError{File: path, Err: err}
	}
	s, err := DecodeSnapshot(body)
	if err != nil {
		return Snapshot{}, &FileError{File: path, Err: err}
	}
	if filepath.Base(path) != uuid.UUID(s.Partition).String() || filepath.Base(filepath.Dir(path)) != uuid.UUID(s.Query).String() {
		return Snapshot{}, &FileError{File: path, Err: fmt.Errorf("%w: it holds query %s partition %s", ErrCorrupt,
			uuid.UUID(s.Query), uuid.UUID(s.Partition))}
	}
	return s, nil
}

// Restore fills an empty store from l. Shards of unknown queries, older than
// their query's last reset, or of partitions live says are gone are left out
// and returned (their files are stale: the caller removes them).
func (s *Store) Restore(l Loaded, live func(partition [16]byte) bool) (stale []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range l.Registry.Queries {
		q := l.Registry.Queries[i]
		s.byID[q.ID] = &q
		s.byName[q.Name] = &q
	}
	for i := range l.Snapshots {
		sn := &l.Snapshots[i]
		q, ok := s.byID[sn.Query]
		if !ok || sn.LSN < q.ResetLSN || !live(sn.Partition) {
			stale = append(stale, l.Paths[i])
			continue
		}
		sh := &shard{rows: make(map[string]Row, len(sn.Rows)), lsn: sn.LSN, cycles: sn.Cycles}
		for _, r := range sn.Rows {
			sh.rows[r.Key] = Row{Value: append([]byte(nil), r.Value...), UpdatedAtMicros: r.UpdatedAtMicros}
			sh.bytes += int64(len(r.Key) + len(r.Value))
		}
		s.shards[ShardKey{sn.Query, sn.Partition}] = sh
	}
	return stale
}

// MaxLSN is the highest LSN the loaded files name (for numbering a lost
// commit log on).
func (l Loaded) MaxLSN() uint64 {
	m := l.Registry.Covers
	for i := range l.Snapshots {
		m = max(m, l.Snapshots[i].LSN)
	}
	return m
}
