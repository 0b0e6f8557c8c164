package streams

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/combmq/comb/vfs"
	"github.com/google/uuid"
)

// snapshotSyncFSMin is the number of snapshot files one pass writes from
// which a single syncfs(2) makes their bodies durable instead of an fsync
// each (as segment's Committer does for logs), with Files.SyncFS only.
const snapshotSyncFSMin = 8

// snapshotSyncWorkers is how many snapshot files are written and fsynced at
// once when each is synced by its own descriptor (as segment's flush pass,
// measured there: BenchmarkFlushPass).
const snapshotSyncWorkers = 16

// pendingSnapshot is a shard's snapshot written to its temp file.
type pendingSnapshot struct {
	k    ShardKey
	lsn  uint64 // the last change it holds
	path string
}

// WriteSnapshots writes the snapshot of every dirty shard, atomically, so
// that disk holds each shard's live rows once whatever the number of updates.
// A shard changed while its file was written stays dirty from the first LSN
// after the one written.
//
// The files are written as one batch, in syscalls linear in the dirty
// shards: each query directory is made when missing, once; every body goes to
// its ".tmp" file; the temp files are synced (an fsync each through its own
// descriptor, snapshotSyncWorkers at a time; with Files.SyncFS one syncfs(2)
// from snapshotSyncFSMin files on), renamed over their
// snapshots, and each query directory is synced once. Writing one file at a
// time listed the query's directory before each file, and over 10,000
// shards a pass took minutes (BenchmarkWriteSnapshots).
//
// Durability: after a crash each snapshot file holds its old body or its new
// one, never a mix (as vfs.WriteFileAtomic); a new query directory is synced
// into Root before its files; a shard counts as written only once its
// directory's sync succeeded. Nothing is synced with NoSync.
func (s *Store) WriteSnapshots(f *Files) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := s.dirtyKeys()
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b ShardKey) int {
		if c := bytes.Compare(a.Query[:], b.Query[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.Partition[:], b.Partition[:])
	})
	var errs []error
	dirOK := f.makeQueryDirs(keys, &errs)
	perFile := !f.NoSync && (!f.SyncFS || len(keys) < snapshotSyncFSMin)
	var todo []ShardKey
	for _, k := range keys {
		if dirOK[k.Query] {
			todo = append(todo, k)
		}
	}
	// Written and fsynced snapshotSyncWorkers at a time when each file is
	// synced by its own descriptor: one after another, 10,000 shards would
	// wait for 10,000 fsyncs in a row.
	written := make([]pendingSnapshot, len(todo))
	werrs := make([]error, len(todo))
	workers := 1
	if perFile {
		workers = snapshotSyncWorkers
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(todo) {
					return
				}
				k := todo[i]
				sn, ok := s.snapshot(k)
				if !ok {
					continue // dropped since
				}
				p := pendingSnapshot{k: k, lsn: sn.LSN, path: f.ShardPath(k)}
				if werrs[i] = f.writeTemp(p.path, EncodeSnapshot(&sn), perFile); werrs[i] == nil {
					written[i] = p
				}
			}
		}()
	}
	wg.Wait()
	var ps []pendingSnapshot
	for i, p := range written {
		switch {
		case werrs[i] != nil:
			errs = append(errs, werrs[i])
		case p.path != "":
			ps = append(ps, p)
		}
	}
	if !perFile && !f.NoSync && len(ps) > 0 {
		if err := f.FS.SyncFS(f.Root); err != nil {
			for _, p := range ps {
				_ = f.FS.Remove(p.path + ".tmp")
			}
			return fmt.Errorf("streams: snapshots: syncfs: %w", err)
		}
	}
	renamed := make(map[[16]byte]bool)
	ok := ps[:0]
	for _, p := range ps {
		if err := f.FS.Rename(p.path+".tmp", p.path); err != nil {
			_ = f.FS.Remove(p.path + ".tmp")
			errs = append(errs, fmt.Errorf("write %s: %w", p.path, err))
			continue
		}
		renamed[p.k.Query] = true
		ok = append(ok, p)
	}
	synced := make(map[[16]byte]bool, len(renamed))
	for q := range renamed {
		dir := filepath.Join(f.Root, uuid.UUID(q).String())
		if f.NoSync {
			synced[q] = true
		} else if err := f.FS.SyncDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", dir, err))
		} else {
			synced[q] = true
		}
	}
	for _, p := range ok {
		if synced[p.k.Query] {
			s.markWritten(p.k, p.lsn)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("streams: snapshots: %w (and %d more)", errs[0], len(errs)-1)
	}
	return nil
}

// makeQueryDirs makes the directory of every query keys names, once each,
// and syncs Root when one was made. It returns the queries whose directory
// is there (and durable); errors are added to errs.
func (f *Files) makeQueryDirs(keys []ShardKey, errs *[]error) map[[16]byte]bool {
	ok := make(map[[16]byte]bool)
	var made [][16]byte
	for i, k := range keys {
		if i > 0 && keys[i-1].Query == k.Query {
			continue // sorted: one query's keys are adjacent
		}
		dir := filepath.Join(f.Root, uuid.UUID(k.Query).String())
		err := f.FS.Mkdir(dir)
		if errors.Is(err, fs.ErrNotExist) { // Root itself is missing
			if err = f.makeRootLocked(); err == nil {
				err = f.FS.Mkdir(dir)
			}
		}
		switch {
		case err == nil:
			made = append(made, k.Query)
		case errors.Is(err, fs.ErrExist):
			ok[k.Query] = true
		default:
			*errs = append(*errs, fmt.Errorf("mkdir %s: %w", dir, err))
		}
	}
	if len(made) > 0 && !f.NoSync {
		if err := f.FS.SyncDir(f.Root); err != nil {
			*errs = append(*errs, fmt.Errorf("sync %s: %w", f.Root, err))
			// Removed (they are empty), so that the next pass makes and
			// syncs them again rather than finding them there.
			for _, q := range made {
				_ = f.FS.Remove(filepath.Join(f.Root, uuid.UUID(q).String()))
			}
			return ok
		}
	}
	for _, q := range made {
		ok[q] = true
	}
	return ok
}

// writeTemp writes body, framed, to path+".tmp", synced when sync; the temp
// file is removed on failure.
func (f *Files) writeTemp(path string, body []byte, sync bool) error {
	b, err := SnapshotFormat.Append(nil, body)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = vfs.WriteTemp(f.FS, path, b, !sync)
	return err
}

// markWritten records that shard k's snapshot file holds every change up to
// lsn: the shard is clean, or dirty from lsn+1 when it changed meanwhile.
func (s *Store) markWritten(k ShardKey, lsn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.shards[k]; sh != nil {
		if sh.lsn == lsn {
			sh.dirtyFrom = 0
		} else {
			sh.dirtyFrom = lsn + 1
		}
	}
}
