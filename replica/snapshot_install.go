package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Snapshot install (docs/replication.md, "Snapshot install"): how a node
// that lacks the state (far behind the leader's compacted log, or a
// replacement with an empty data directory) gets it.
//
// A snapshot this node takes is its marker alone: its data directory is the
// state, made durable by the flush pass in Persist. When raft sends the
// newest snapshot to another node it opens it through snapshotStore.Open,
// which streams the marker flagged markerArchive followed by the data
// directory's archive (archive.go, the files the broker lists in
// SnapshotFiles), its exact size computed first as raft requires. The
// receiving raft stores the whole stream as a snapshot of its own and hands
// it to fsm.Restore, which installs nothing while the broker runs: it marks
// the node stale (it stops applying, the broker freezes, comb serve
// re-executes itself), and the next start, before the broker opens, finds
// its newest snapshot carries an archive it has not installed and swaps its
// data directory for it (PrepareDataDir). Raft then applies the entries
// after the snapshot, which the broker's idempotent replay skips where the
// files hold them.

// ErrRestartToInstall is the sticky error of a node that received another
// node's snapshot: it applies nothing more until a restart installs it.
var ErrRestartToInstall = errors.New("replica: received another node's snapshot; restart to install it")

// errRestartToInstall is ErrRestartToInstall as Log.err stores it.
var errRestartToInstall error = ErrRestartToInstall

const (
	installStaging = "install-tmp" // under the data directory
	installSwap    = ".swapping"   // in the staging directory: the old state is gone, move the new one in
	installedFile  = "installed"   // under raft's directory: the id of the archive the data directory holds
)

// snapshotStore is raft's file snapshot store, except that opening this
// node's own snapshot (a marker) yields the marker with its data directory's
// archive: raft opens a snapshot only to send it (a start restores none:
// Config.NoSnapshotRestoreOnStart) or to restore one it received, which
// holds its archive already.
type snapshotStore struct {
	*raft.FileSnapshotStore
	l *Log
}

func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	m, err := readMarker(rc)
	rc.Close()
	if err != nil {
		return nil, nil, err
	}
	if m.archive {
		return s.FileSnapshotStore.Open(id) // received: sent on as it came
	}
	if s.l.fsm == nil {
		return nil, nil, errors.New("replica: snapshot opened before Start")
	}
	var files []archiveFile
	release, err := s.l.fsm.a.SnapshotFiles(func(rel, path string, size int64) {
		files = append(files, archiveFile{rel: rel, path: path, size: size})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("replica: snapshot %s: %w", id, err)
	}
	m.archive = true
	head := m.encode()
	sent := *meta
	sent.Size = int64(len(head)) + archiveSize(files)
	ar := &archiveReader{files: files, release: release}
	s.l.logger.Info("sending this node's data directory as a snapshot", "id", id, "files", len(files), "bytes", sent.Size)
	return &sent, struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), ar), ar}, nil
}

// PrepareDataDir installs, before the broker opens dataDir, the archive of
// the newest snapshot in raftDir's store when that snapshot came from
// another node and is not installed yet (see the top of this file), and
// finishes a swap a crash interrupted. It reports the snapshot id it
// installed ("" for none). Safe to run at every start; it is a few reads
// when there is nothing to do.
//
// Crash safety: the archive is extracted into <data>/install-tmp and synced;
// the old state is removed and <data>/install-tmp/.swapping written; every
// entry is renamed into place; the staging directory removed; the
// snapshot's id written to <raft>/installed. A crash before .swapping
// extracts again, after it renames the rest, after the removal extracts and
// swaps the same archive again over a directory no broker opened.
//
// Errors: the store's, ErrBadArchive, file system errors wrapped with the
// path.
func PrepareDataDir(dataDir, raftDir string, logger hclog.Logger) (string, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	staging := filepath.Join(dataDir, installStaging)
	if _, err := os.Stat(filepath.Join(staging, installSwap)); err == nil {
		if err := swapIn(dataDir, staging); err != nil {
			return "", err
		}
	}
	base := filepath.Join(raftDir, "snapshots") // as Open makes it
	if _, err := os.Stat(base); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	store, err := raft.NewFileSnapshotStoreWithLogger(base, snapshotsRetained, logger.Named("snapshots"))
	if err != nil {
		return "", fmt.Errorf("replica: snapshot store: %w", err)
	}
	list, err := store.List()
	if err != nil || len(list) == 0 {
		return "", err
	}
	id := list[0].ID
	_, rc, err := store.Open(id)
	if err != nil {
		return "", fmt.Errorf("replica: snapshot %s: %w", id, err)
	}
	defer rc.Close()
	m, err := readMarker(rc)
	if err != nil {
		return "", fmt.Errorf("replica: snapshot %s: %w", id, err)
	}
	if !m.archive {
		return "", nil
	}
	if done, err := os.ReadFile(filepath.Join(raftDir, installedFile)); err == nil && string(done) == id {
		return "", nil
	}
	logger.Info("installing another node's snapshot into the data directory", "id", id, "from", m.node, "lsn", m.lsn)
	if err := os.RemoveAll(staging); err != nil {
		return "", fmt.Errorf("replica: %w", err)
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		return "", fmt.Errorf("replica: %w", err)
	}
	if err := extractArchive(rc, staging); err != nil {
		return "", fmt.Errorf("replica: snapshot %s: %w", id, err)
	}
	if err := swapIn(dataDir, staging); err != nil {
		return "", err
	}
	if err := writeSynced(filepath.Join(raftDir, installedFile), []byte(id)); err != nil {
		return "", err
	}
	return id, nil
}

// swapIn replaces dataDir's state (everything but raft's directory, the
// staging directory and the LOCK) with staging's entries (see
// PrepareDataDir for the order).
func swapIn(dataDir, staging string) error {
	mark := filepath.Join(staging, installSwap)
	if _, err := os.Stat(mark); errors.Is(err, os.ErrNotExist) {
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		for _, e := range entries {
			if keepOnInstall(e.Name()) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(dataDir, e.Name())); err != nil {
				return fmt.Errorf("replica: %w", err)
			}
		}
		if err := syncDir(dataDir); err != nil {
			return err
		}
		if err := writeSynced(mark, nil); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(staging)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	for _, e := range entries {
		if e.Name() == installSwap || keepOnInstall(e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dataDir, e.Name())); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	if err := syncDir(dataDir); err != nil {
		return err
	}
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return syncDir(dataDir)
}

// keepOnInstall names the data directory's entries an install leaves alone.
func keepOnInstall(name string) bool {
	return name == "raft" || name == installStaging || name == "LOCK"
}

// writeSynced writes data to path, fsyncs it and its directory.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("replica: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("replica: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return syncDir(filepath.Dir(path))
}
