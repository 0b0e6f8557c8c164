package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/uuid"

	"github.com/combmq/comb/layout"
)

// LogDir is one segment.Log directory found in a data directory.
type LogDir struct {
	ID   [16]byte // partition id (partitions/) or queue id (dlq/)
	Path string   // absolute
	Rel  string   // relative to the data directory, for reports
	DLQ  bool
}

// ListLogs returns every partition and DLQ log directory, partitions first, each group
// sorted by id. A directory whose name is not a UUID is returned with a zero ID.
func ListLogs(dataDir string) ([]LogDir, error) {
	var out []LogDir
	for _, sub := range []string{layout.Partitions, layout.DLQ} {
		ents, err := os.ReadDir(filepath.Join(dataDir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", sub, err)
		}
		var dirs []LogDir
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := LogDir{Path: filepath.Join(dataDir, sub, e.Name()), Rel: filepath.Join(sub, e.Name()), DLQ: sub == layout.DLQ}
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

// Check reports whether dir looks like a comb data directory: an error wrapping
// ErrNotDataDir when it does not exist, is not a directory, or holds none of
// meta/, cursor/, partitions/, dlq/ and LOCK.
func Check(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", dir, ErrNotDataDir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", dir, ErrNotDataDir)
	}
	for _, sub := range []string{layout.Meta, layout.Cursor, layout.Partitions, layout.DLQ, layout.Lock} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: none of meta/, cursor/, partitions/, dlq/, LOCK", dir, ErrNotDataDir)
}

// IDString renders a partition or queue id as its directory name ("" for the
// zero id: a directory whose name is not a UUID).
func IDString(id [16]byte) string {
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
