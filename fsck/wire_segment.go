package fsck

import (
	"path/filepath"
	"strings"

	"github.com/combmq/comb/segment"
)

// scanLog verifies one segment.Log directory read-only; onBytes is called with the
// bytes of each file as it is scanned (progress).
func scanLog(dir string, onBytes func(int64)) (*logScan, error) {
	return nil, ErrNotWired
}

// reopenLog runs the segment log's own recovery (truncate a torn tail, rebuild
// missing or stale indexes, fsync) and closes it.
func reopenLog(dir string) error {
	l, _, err := segment.Open(dir, segment.Options{})
	if err != nil {
		return err
	}
	return l.Close()
}

// indexFilesFor returns the index file that describes segment file name in dir
// ("<base>.seg" → "<base>.idx"; docs/format.md).
func indexFilesFor(dir, name string) []string {
	base, ok := strings.CutSuffix(name, ".seg")
	if !ok {
		return nil
	}
	return []string{filepath.Join(dir, base+".idx")}
}
