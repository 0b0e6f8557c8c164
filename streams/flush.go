package streams

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// WriteRegistry writes the registry file covering LSN covers when the
// registry changed since the last write. The caller guarantees that every
// registry entry at or below covers has been applied (the broker holds its
// registration lock).
//
// Durability: vfs.WriteFileAtomic (temp file, sync, rename, sync the
// directory) unless NoSync.
func (s *Store) WriteRegistry(f *Files, covers uint64) error {
	s.mu.Lock()
	if !s.regDirty {
		s.mu.Unlock()
		return nil
	}
	r := Registry{Covers: covers}
	for _, q := range s.byID {
		r.Queries = append(r.Queries, *q)
	}
	s.regDirty = false
	s.mu.Unlock()
	slices.SortFunc(r.Queries, func(a, b Query) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.makeRootLocked()
	if err == nil {
		err = RegistryFormat.WriteFile(f.FS, filepath.Join(f.Root, RegistryFile), EncodeRegistry(r), f.NoSync)
	}
	if err != nil {
		s.mu.Lock()
		s.regDirty = true
		s.mu.Unlock()
		return fmt.Errorf("streams: registry: %w", err)
	}
	return nil
}

// makeRootLocked makes Root when it is missing and syncs it into its parent
// (the data directory): the files under it are the only copy of what the
// commit log was truncated behind, so the directory itself must survive a
// power loss. The caller holds f.mu.
func (f *Files) makeRootLocked() error {
	err := f.FS.Mkdir(f.Root)
	if errors.Is(err, fs.ErrNotExist) {
		err = f.FS.MkdirAll(f.Root)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return err
	case f.NoSync:
		return nil
	}
	if err := f.FS.SyncDir(filepath.Dir(f.Root)); err != nil {
		_ = f.FS.Remove(f.Root) // empty: the next write makes and syncs it again
		return err
	}
	return nil
}

func (s *Store) dirtyKeys() []ShardKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []ShardKey
	for k, sh := range s.shards {
		if sh.dirtyFrom != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// snapshot copies shard k's rows, sorted by key. Only the copy holds the
// store's lock; the sort (tens of ms for 100,000 keys) runs after it, so a
// large shard's snapshot does not hold up every cycle's apply.
func (s *Store) snapshot(k ShardKey) (Snapshot, bool) {
	s.mu.Lock()
	sh := s.shards[k]
	if sh == nil {
		s.mu.Unlock()
		return Snapshot{}, false
	}
	sn := Snapshot{Query: k.Query, Partition: k.Partition, LSN: sh.lsn, Cycles: sh.cycles, Rows: make([]KeyRow, 0, len(sh.rows))}
	for key, r := range sh.rows {
		sn.Rows = append(sn.Rows, KeyRow{Key: key, Row: r})
	}
	s.mu.Unlock()
	sortRows(sn.Rows)
	return sn, true
}

// MinDirtyLSN is the oldest LSN whose change no written snapshot holds (0 =
// none): the commit log must not be truncated past it.
func (s *Store) MinDirtyLSN() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m uint64
	for _, sh := range s.shards {
		if sh.dirtyFrom != 0 && (m == 0 || sh.dirtyFrom < m) {
			m = sh.dirtyFrom
		}
	}
	return m
}

// RemoveShards deletes the snapshot files of ks (dropped shards) and the
// directories of queries left without one. Not synced: a file that comes
// back after a crash is older than its query's reset, or names a deleted
// partition, and Restore leaves it out.
func (f *Files) RemoveShards(ks []ShardKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	dirs := map[string]bool{}
	for _, k := range ks {
		p := f.ShardPath(k)
		dirs[filepath.Dir(p)] = true
		if err := f.FS.Remove(p); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		}
	}
	for d := range dirs {
		if names, err := f.FS.List(d); err == nil && len(names) == 0 {
			_ = f.FS.Remove(d)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("streams: remove shards: %w", errs[0])
	}
	return nil
}

// RemovePaths deletes files Restore called stale.
func (f *Files) RemovePaths(paths []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if err := f.FS.Remove(p); err != nil && !isNotExist(err) {
			return fmt.Errorf("streams: %w", err)
		}
	}
	return nil
}
