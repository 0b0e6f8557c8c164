package dedup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// CutFile drops the verified entries of dir's dedup.idx for offsets at or
// after keepBelow (they would claim those offsets as indexed while a replay
// and later appends may put other records there) and fdatasyncs the cut, so
// no crash brings them back (segment.OpenFrom, docs/format.md 4.3). A file
// that does not verify is left to the next load, which trusts none of it
// past the first failing byte; a missing file is no error. With dry it only
// counts. It returns how many entries it dropped (or would drop).
func CutFile(fsys vfs.FS, dir string, keepBelow uint64, dry bool) (int, error) {
	path := filepath.Join(dir, FileName)
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		if dry {
			return 0, nil
		}
		return 0, err
	}
	keep, drop := -1, 0
	if _, err := index.ScanDedup(b, func(i int, _, off uint64) {
		if off >= keepBelow {
			if keep < 0 {
				keep = i
			}
			drop++
		}
	}); err != nil || keep < 0 {
		return 0, nil
	}
	if dry {
		return drop, nil
	}
	f, err := openAppend(fsys, path, false)
	if err != nil {
		return 0, err
	}
	err = f.Truncate(int64(index.DedupHeaderSize + keep*index.DedupEntrySize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("cut %s: %w", FileName, err)
	}
	return drop, nil
}

// RemoveRunsFrom deletes the run files of dir that cover any offset at or
// after keepBelow and returns how many entries they held (segment.OpenFrom:
// those offsets are cut and replayed, and may hold other records
// afterwards), then fsyncs dir so the removals survive a crash. With dry,
// it only counts.
func RemoveRunsFrom(fsys vfs.FS, dir string, keepBelow uint64, dry bool) (entries int, err error) {
	runs, err := listRuns(fsys, dir)
	if err != nil {
		return 0, err
	}
	removed := false
	for _, fl := range runs {
		if fl[1] < keepBelow {
			continue
		}
		if b, rerr := fsys.ReadFile(filepath.Join(dir, runName(fl[0], fl[1]))); rerr == nil {
			if hdr, herr := index.ParseRunHeader(b); herr == nil {
				entries += hdr.Count
			}
		}
		if !dry {
			if err := fsys.Remove(filepath.Join(dir, runName(fl[0], fl[1]))); err != nil {
				return entries, err
			}
			removed = true
		}
	}
	if removed {
		err = fsys.SyncDir(dir)
	}
	return entries, err
}
