package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/combmq/comb/segment/dedup"
	"github.com/combmq/comb/vfs"
)

// PlanFrom says, reading only, what OpenFrom(dir, _, keepBelow) would cut
// (docs/format.md section 5, "Opening below a commit log"), for offline
// checks (comb fsck) that must judge a log by the rule its server will apply:
// the file cut after the segment ending at keepBelow-1 (File, At, Bytes; for
// an empty carrier file named keepBelow, At is 0), the files removed whole
// (Removed, RemovedBytes) and the dedup.idx entries dropped (DedupEntries).
// Nothing is written. Safe on a live directory (it may then see a segment
// being written).
//
// Errors: the *CorruptionError OpenFrom would return for offsets below
// keepBelow that are missing or damaged, or a segment straddling keepBelow;
// an error for keepBelow 0; I/O errors wrapped with the path.
func PlanFrom(dir string, keepBelow uint64) (UnsyncedCut, error) {
	return planFrom(vfs.OS, dir, keepBelow)
}

func planFrom(fsys fileSystem, dir string, keepBelow uint64) (UnsyncedCut, error) {
	cut := UnsyncedCut{KeepBelow: keepBelow}
	if keepBelow == 0 {
		return cut, fmt.Errorf("segment log %s: open from offset 0: offsets start at 1", dir)
	}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if keepBelow > 1 {
			return cut, &CorruptionError{File: dir, FirstOffset: 1, LastOffset: keepBelow - 1,
				Reason: fmt.Sprintf("the log directory is missing, but offsets below %d were synced", keepBelow)}
		}
		return cut, nil
	}
	if err != nil {
		return cut, fmt.Errorf("segment log %s: %w", dir, err)
	}
	var bases []uint64
	for _, n := range names {
		if base, ok := parseSegName(n); ok {
			bases = append(bases, base)
		}
	}
	l := newLog(fsys, dir, Options{FS: fsys})
	plan, err := l.planKeep(bases, keepBelow)
	if err != nil {
		return cut, err
	}
	for _, base := range bases {
		if base < keepBelow {
			continue
		}
		size, err := fileSize(fsys, join(dir, segName(base)))
		if err != nil {
			return cut, err
		}
		if plan.carrier && base == keepBelow {
			if size > 0 {
				cut.File, cut.At, cut.Bytes = join(dir, segName(base)), 0, size
			}
			continue
		}
		cut.Removed = append(cut.Removed, join(dir, segName(base)))
		cut.RemovedBytes += size
	}
	if plan.file != 0 && plan.size > plan.cutAt {
		cut.File, cut.At, cut.Bytes = join(dir, segName(plan.file)), plan.cutAt, plan.size-plan.cutAt
	}
	cut.DedupEntries, _ = dedup.CutFile(fsys, dir, keepBelow, true) // a file that does not verify is left to the load
	if n, err := dedup.RemoveRunsFrom(fsys, dir, keepBelow, true); err == nil {
		cut.DedupEntries += n
	}
	return cut, nil
}

// fileSize returns the size of the file at path (0 when it is gone).
func fileSize(fsys fileSystem, path string) (int64, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size()
}
