package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/combmq/comb/vfs"
)

// Finishing a split that a crash or an error interrupted (split.go has the
// order of Apply's steps and why each state is safe).

// FinishSplits completes, or undoes, splits of dir's files that a crash or
// an error interrupted (see the order in split.go), removes run copies
// no pending split owns, and returns the number of pending splits it
// finished. fsck --repair runs it before planning new repairs; the server
// never does (a pending split leaves a consistent directory, only a wider
// gap). Durability: as Apply's.
func FinishSplits(dir string) (int, error) {
	return finishSplitsFS(vfs.OS, dir)
}

// PendingSplits reports the files of an interrupted split in dir: the
// marker's pending lines and the run copies waiting beside the log (names).
// Read-only.
func PendingSplits(dir string) (pending []OffsetRange, copies []string, err error) {
	lines, names, err := splitState(vfs.OS, dir)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range lines {
		if isPending(l) {
			pending = append(pending, *l.r)
		}
	}
	for _, n := range names {
		if _, ok := parseSplitName(n); ok {
			copies = append(copies, n)
		}
	}
	return pending, copies, nil
}

func splitState(fsys fileSystem, dir string) ([]markerLine, []string, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, nil, err
	}
	b, err := fsys.ReadFile(join(dir, QuarantineFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, names, nil
	}
	if err != nil {
		return nil, nil, err
	}
	lines, err := parseMarkerLines(b)
	return lines, names, err
}

func isPending(l markerLine) bool {
	return l.r != nil && (l.note == pendingNote || strings.HasPrefix(l.note, pendingNote+" "))
}

func finishSplitsFS(fsys fileSystem, dir string) (int, error) {
	lines, names, err := splitState(fsys, dir)
	if err != nil {
		return 0, fmt.Errorf("finish splits in %s: %w", dir, err)
	}
	segs, copies := map[uint64]bool{}, map[uint64]bool{}
	for _, n := range names {
		if b, ok := parseSegName(n); ok {
			segs[b] = true
		} else if b, ok := parseSplitName(n); ok {
			copies[b] = true
		}
	}
	done := 0
	owned := map[uint64]bool{}
	for _, l := range lines {
		if !isPending(l) {
			continue
		}
		r := *l.r
		var group []uint64
		for b := range copies {
			if b >= r.First && b <= r.Last {
				group = append(group, b)
				owned[b] = true
			}
		}
		sort.Slice(group, func(i, j int) bool { return group[i] > group[j] }) // the original's name last
		if segs[r.First] && !wholeRun(fsys, join(dir, segName(r.First))) {
			// The damaged original never left (a run that took its name is
			// whole): undo, the next check plans the split again.
			for _, b := range group {
				if err := fsys.Remove(join(dir, splitName(b))); err != nil {
					return done, fmt.Errorf("finish splits in %s: %w", dir, err)
				}
			}
			if err := fsys.SyncDir(dir); err != nil {
				return done, fmt.Errorf("finish splits in %s: %w", dir, err)
			}
			if err := replacePending(fsys, dir, r, nil, ""); err != nil {
				return done, err
			}
			continue
		}
		for _, b := range group {
			if _, _, err := checkRunFile(fsys, join(dir, splitName(b))); err != nil {
				return done, fmt.Errorf("finish splits in %s: %w", dir, err)
			}
			if err := fsys.Rename(join(dir, splitName(b)), join(dir, segName(b))); err != nil {
				return done, fmt.Errorf("finish splits in %s: %w", dir, err)
			}
			segs[b] = true
		}
		if err := fsys.SyncDir(dir); err != nil {
			return done, fmt.Errorf("finish splits in %s: %w", dir, err)
		}
		gaps, err := uncovered(fsys, dir, r, segs)
		if err != nil {
			return done, fmt.Errorf("finish splits in %s: %w", dir, err)
		}
		note := strings.TrimPrefix(strings.TrimPrefix(l.note, pendingNote), " ")
		if _, rest, ok := strings.Cut(note, " "); ok { // drop the file name
			note = rest
		} else {
			note = ""
		}
		if err := replacePending(fsys, dir, r, gaps, note); err != nil {
			return done, err
		}
		done++
	}
	for b := range copies {
		if !owned[b] {
			// A copy no pending line owns: step 1 was interrupted.
			if err := fsys.Remove(join(dir, splitName(b))); err != nil {
				return done, fmt.Errorf("finish splits in %s: %w", dir, err)
			}
		}
	}
	return done, nil
}

// wholeRun reports whether the segment file at path is whole: every segment
// verifies, offsets dense, timestamps not decreasing.
func wholeRun(fsys fileSystem, path string) bool {
	_, _, err := checkRunFile(fsys, path)
	return err == nil
}

// replacePending replaces the pending line of range r with one line per gap
// that the other lines do not list already (a split redone after an undo
// lists its gaps once).
func replacePending(fsys fileSystem, dir string, r OffsetRange, gaps []OffsetRange, note string) error {
	return editQuarantineFS(fsys, dir, func(ls []markerLine) []markerLine {
		out := ls[:0:0]
		var listed []OffsetRange
		for _, l := range ls {
			if isPending(l) && *l.r == r {
				continue
			}
			if l.r != nil && !isPending(l) {
				listed = append(listed, *l.r)
			}
			out = append(out, l)
		}
		for _, g := range gaps {
			if !QuarantineCovers(listed, g.First, g.Last) {
				out = append(out, newMarkerLine(g, note))
			}
		}
		return out
	})
}

// uncovered returns the offsets of r that no segment file of dir holds: the
// files named inside r are read (every segment checked; a file's offsets
// end at its first damaged segment).
func uncovered(fsys fileSystem, dir string, r OffsetRange, segs map[uint64]bool) ([]OffsetRange, error) {
	var bases []uint64
	for b := range segs {
		if b >= r.First && b <= r.Last {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	var gaps []OffsetRange
	need := r.First
	for _, b := range bases {
		_, next, err := checkRunFile(fsys, join(dir, segName(b)))
		var ce *CorruptionError
		if errors.As(err, &ce) {
			next = prefixEnd(fsys, join(dir, segName(b)), b)
		} else if err != nil {
			return nil, err
		}
		if b > need {
			gaps = append(gaps, OffsetRange{First: need, Last: b - 1})
		}
		need = max(need, next)
	}
	if need <= r.Last {
		gaps = append(gaps, OffsetRange{First: need, Last: r.Last})
	}
	return gaps, nil
}

// prefixEnd returns the offset after the whole segments at the start of a
// damaged file (base when none).
func prefixEnd(fsys fileSystem, path string, base uint64) uint64 {
	f, err := fsys.OpenFile(path, os.O_RDONLY)
	if err != nil {
		return base
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return base
	}
	sc := scanner{f: f, size: size}
	var dec []byte
	next := base
	for pos := int64(0); pos < size; {
		h, err := sc.wholeSegment(pos, &dec)
		if err != nil || h.base != next {
			break
		}
		next, pos = h.last()+1, pos+h.size()
	}
	return next
}

// parseSplitName parses "<20 digits>.seg.split".
func parseSplitName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, splitSuffix)
	if !ok {
		return 0, false
	}
	return parseSegName(s)
}
