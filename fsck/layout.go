package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/layout"
	"github.com/google/uuid"
)

// Subdirectories of a data directory (package layout names them for the server and fsck
// alike; docs/format.md, sections 7 to 11, describes them).
const (
	dirMeta       = layout.Meta
	dirCursor     = layout.Cursor
	dirPartitions = layout.Partitions
	dirDLQ        = layout.DLQ
	dirQuarantine = layout.Quarantine
)

// logDir is one segment.Log directory found in a data directory.
type logDir struct {
	ID   [16]byte // partition id (partitions/) or queue id (dlq/)
	Path string   // absolute
	Rel  string   // relative to the data directory, for reports
	DLQ  bool
}

// listLogs returns every partition and DLQ log directory, partitions first, each group
// sorted by id. A directory whose name is not a UUID is returned with a zero ID.
func listLogs(dataDir string) ([]logDir, error) {
	var out []logDir
	for _, sub := range []string{dirPartitions, dirDLQ} {
		ents, err := os.ReadDir(filepath.Join(dataDir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", sub, err)
		}
		var dirs []logDir
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := logDir{Path: filepath.Join(dataDir, sub, e.Name()), Rel: filepath.Join(sub, e.Name()), DLQ: sub == dirDLQ}
			if u, err := uuid.Parse(e.Name()); err == nil {
				d.ID = u
			}
			dirs = append(dirs, d)
		}
		sort.Slice(dirs, func(i, j int) bool { return dirs[i].Rel < dirs[j].Rel })
		out = append(out, dirs...)
	}
	return out, nil
}

// isDataDir reports whether dir looks like a comb data directory.
func isDataDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", dir, ErrNotDataDir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", dir, ErrNotDataDir)
	}
	for _, sub := range []string{dirMeta, dirCursor, dirPartitions, dirDLQ, lockFile} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: none of meta/, cursor/, partitions/, dlq/, LOCK", dir, ErrNotDataDir)
}

func idString(id [16]byte) string {
	if id == ([16]byte{}) {
		return ""
	}
	return uuid.UUID(id).String()
}

// isDir reports whether path is an existing directory.
func isDir(path string) (bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}
