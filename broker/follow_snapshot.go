package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/layout"
)

// snapshotOutgoing is the directory, under the data directory, where
// SnapshotFiles hard-links what a snapshot sends (removed once sent, and at
// the next call when a crash left it).
const snapshotOutgoing = "snapshot-outgoing"

// notSnapshotted are the data directory's entries another node must not
// receive: raft's own state, the local commit log (unused when replicated),
// quarantined damage, the LOCK, and the install and send staging areas.
var notSnapshotted = map[string]bool{layout.Raft: true, layout.CommitLog: true, layout.Quarantine: true, layout.Lock: true,
	snapshotOutgoing: true, "install-tmp": true}

// SnapshotFiles hands visit every file another node needs to start from
// this node's state (replica's snapshot install, docs/replication.md
// "Snapshot install"): rel is the path under the data directory
// ('/'-separated), path where to read it, size how many bytes to send.
//
// Under the flush pass's lock every file is hard-linked into
// <data>/snapshot-outgoing, so the state files are those the last pass
// wrote together (metadata and summaries, cursor and streams snapshots; a
// later pass replaces them by rename, which leaves the links alone), and no
// merge or retention removes a file while it streams; each size is the
// file's now (a log may have grown past its summary: the receiver's start
// cuts it back, as after a crash). release removes the links.
//
// Errors: ErrStale on a node that must restart, ErrClosed, and the file
// system's, wrapped with the path.
func (b *Broker) SnapshotFiles(visit func(rel, path string, size int64)) (release func(), err error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	b.flush.mu.Lock()
	defer b.flush.mu.Unlock()
	if b.isStale() {
		return nil, ErrStale
	}
	out := filepath.Join(b.dir, snapshotOutgoing)
	if err := os.RemoveAll(out); err != nil {
		return nil, fmt.Errorf("broker: snapshot: %w", err)
	}
	release = func() {
		if err := os.RemoveAll(out); err != nil {
			b.log.Warn().Err(err).Str("dir", out).Msg("snapshot: removing the sent files' links (the next snapshot does)")
		}
	}
	err = filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since it was listed (a queue deleted)
			}
			return err
		}
		rel, rerr := filepath.Rel(b.dir, path)
		if rerr != nil || rel == "." {
			return rerr
		}
		if !strings.ContainsRune(rel, filepath.Separator) && notSnapshotted[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(rel, ".tmp") {
			return nil
		}
		link := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			return err
		}
		if err := os.Link(path, link); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		st, err := os.Stat(link)
		if err != nil {
			return err
		}
		visit(filepath.ToSlash(rel), link, st.Size())
		return nil
	})
	if err != nil {
		release()
		return nil, fmt.Errorf("broker: snapshot: %w", err)
	}
	return release, nil
}
