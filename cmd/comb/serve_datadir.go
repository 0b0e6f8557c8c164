package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/vfs"
)

// A data directory is either a single node's or a cluster node's, and serve refuses to open one
// as the other. Both mistakes start without a word otherwise and leave one node whose state the
// others do not share (found by hand, issue 15):
//   - a cluster node's directory served without the cluster flags (a lost environment file)
//     becomes a single node that takes writes the cluster never sees; started again with the
//     flags, it follows the cluster with those writes still in its files, and serves them if it
//     ever leads;
//   - a single node's directory given the cluster flags joins a cluster (--initial-cluster-state
//     existing) with messages and cursors that only this node holds, for the same outcome.
//     Bootstrapping (new) on one is how a cluster is rebuilt from a copy of a survivor's
//     directory, right only when every member starts from the same copy: allowed, with a
//     warning, since one node cannot tell.
// raft's log directory (<data>/raft/wal, made by replica.Open before the broker writes
// anything) marks a cluster node's directory.

// errDataDirRole is the refusal; the message says what to do.
var errDataDirRole = errors.New("data directory does not match the cluster flags")

// checkDataDirRole returns errDataDirRole (wrapped, with what to do) when dataDir is a cluster
// node's and clustered is false, or holds a single node's state and the node joins; warn is
// set when it holds one and the node bootstraps.
//
// Errors: errDataDirRole, or the directory's read error.
func checkDataDirRole(dataDir string, clustered, joining bool) (warn string, err error) {
	wal := filepath.Join(dataDir, layout.Raft, "wal")
	_, err = os.Stat(wal)
	hasRaft := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", wal, err)
	}
	switch {
	case !clustered && hasRaft:
		return "", fmt.Errorf("%s holds a cluster node's raft state (raft/wal): %w; start it with its --node-id, --raft-addr and --initial-cluster, or, to make a single node of a copy, remove %s first (docs/operations.md, Repair)",
			dataDir, errDataDirRole, filepath.Join(dataDir, layout.Raft))
	case clustered && !hasRaft:
		entries, err := os.ReadDir(dataDir)
		if err != nil {
			return "", fmt.Errorf("%s: %w", dataDir, err)
		}
		for _, e := range entries {
			switch e.Name() {
			case layout.Lock, layout.Raft, "lost+found", vfs.ProbeFile, broker.SpaceProbeFile: // the lock, raft's own, a file system's root, a sync probe a crash left
				continue
			}
			if !joining {
				return fmt.Sprintf("%s holds a single node's data (%s): this node bootstraps the cluster on it, right only if every member starts from a copy of the same directory; otherwise stop, empty the others' or this directory, and start again", dataDir, e.Name()), nil
			}
			return "", fmt.Errorf("%s holds a single node's data (%s) and no raft state: %w; a node joins a cluster with an empty data directory and receives the cluster's state from it (docs/operations.md, Grow)",
				dataDir, e.Name(), errDataDirRole)
		}
	}
	return "", nil
}
