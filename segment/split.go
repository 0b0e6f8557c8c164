package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/vfs"
)

// Splitting a damaged sealed file (issue 10, docs/format.md section 5 rule
// 5). A bit flipped in one segment of a 64 MiB sealed file must not take the
// whole file out of service: `comb fsck --repair` rewrites the file as its
// good runs of segments, each a file of its own named by its first offset,
// and leaves the offsets of the damaged bytes as a gap the QUARANTINE marker
// covers. The original file is moved to quarantine whole (never deleted).
//
// Several names change, and no rename can change them all at once, so the
// order is what makes a crash harmless. At every point a crash leaves a
// directory Open accepts and serves correctly (every offset it serves is the
// original record; every offset it lacks is covered by the marker):
//
//  1. each good run is copied to "<first offset>.seg.split" (a name Open
//     ignores), fdatasynced and read back; the directory is synced;
//  2. the marker gains a pending line covering the file's whole range,
//     "<base> <end-1> split-pending <file> <note>" (harmless while the file
//     is still there: a marker only permits a gap);
//  3. the original moves to its quarantine path (its stale index file is
//     removed, a cache); both directories are synced: from here the marker
//     covers the whole file's gap;
//  4. the runs are renamed to "<first offset>.seg", the one that keeps the
//     original's name last; the directory is synced;
//  5. the pending line is replaced by one line per damaged range, with the
//     note (atomic marker rewrite).
//
// FinishSplits (fsck --repair runs it first) completes an interrupted split:
// with the original still in place it removes the copies and the pending
// line (the next check plans the split again); with it moved, it renames the
// remaining runs in and narrows the marker.

// splitSuffix marks a run of a split not yet renamed into the log.
const splitSuffix = ".split"

// pendingNote starts the note of a marker line written by step 2.
const pendingNote = "split-pending"

// ErrNotSealed is returned by PlanSplit for the newest file of a log (whose
// tail recovery owns) or a file that is not in the directory.
var ErrNotSealed = errors.New("segment: not a sealed segment file of the log")

// SplitPlan says how a damaged sealed file is rewritten as its good runs.
type SplitPlan struct {
	Dir, File string // the log directory and the damaged file's base name
	Base, End uint64 // the file's offsets are [Base, End): End is the next file's name
	Size      int64  // the file's size in bytes
	Runs      []SplitRun
	Damaged   []DamagedRange // in file order; between, before or after the runs
}

// SplitRun is a run of whole, verified, consecutive segments of the file:
// bytes [StartByte, EndByte), offsets [FirstOffset, NextOffset). It becomes
// the file "<FirstOffset>.seg".
type SplitRun struct {
	StartByte, EndByte      int64
	FirstOffset, NextOffset uint64
}

// DamagedRange is a byte range of the file that is not whole, verified
// segments following the run before it, and the offsets it held (the gap it
// leaves; 0,0 when it held none).
type DamagedRange struct {
	StartByte, EndByte      int64
	FirstOffset, LastOffset uint64
	Reason                  string
}

// Gaps returns the offset ranges the split leaves out of the log.
func (p *SplitPlan) Gaps() []OffsetRange {
	var out []OffsetRange
	for _, d := range p.Damaged {
		if d.FirstOffset != 0 {
			out = append(out, OffsetRange{First: d.FirstOffset, Last: d.LastOffset})
		}
	}
	return out
}

// PlanSplit reads the sealed segment file name of the log in dir and
// returns how Apply would rewrite it: every segment is checked as Verify
// checks it (header, checksum, decompression, records, dense offsets,
// timestamps), runs of good ones become files, the rest are damaged ranges.
// Read-only. Errors: ErrNotSealed, ErrCorrupt when the good segments'
// offsets do not fit the file's range (a person must look), or I/O errors.
func PlanSplit(dir, name string) (*SplitPlan, error) {
	return planSplitFS(vfs.OS, dir, name)
}

func planSplitFS(fsys fileSystem, dir, name string) (*SplitPlan, error) {
	base, ok := parseSegName(name)
	if !ok {
		return nil, fmt.Errorf("split %s: %w", name, ErrNotSealed)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", name, err)
	}
	p := &SplitPlan{Dir: dir, File: name, Base: base}
	found := false
	for _, n := range names {
		b, ok := parseSegName(n)
		switch {
		case ok && b == base:
			found = true
		case ok && b > base && (p.End == 0 || b < p.End):
			p.End = b
		}
	}
	if !found || p.End == 0 {
		return nil, fmt.Errorf("split %s: %w", name, ErrNotSealed)
	}
	f, err := fsys.OpenFile(join(dir, name), os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", name, err)
	}
	defer f.Close()
	if p.Size, err = f.Size(); err != nil {
		return nil, fmt.Errorf("split %s: %w", name, err)
	}
	if err := p.walk(f); err != nil {
		return nil, fmt.Errorf("split %s: %w", join(dir, name), err)
	}
	return p, nil
}

// walk fills Runs and Damaged from the file's bytes.
func (p *SplitPlan) walk(f file) error {
	sc := scanner{f: f, size: p.Size}
	var dec []byte
	expect, lastTs := p.Base, int64(0)
	var cur *SplitRun
	bad := int64(-1) // start of the damaged range being walked, -1 when none
	reason := ""
	for pos := int64(0); pos < p.Size; {
		h, err := sc.wholeSegment(pos, &dec)
		switch {
		case err != nil:
		case cur != nil && h.base != cur.NextOffset:
			err = fmt.Errorf("segment base offset %d, expected %d", h.base, cur.NextOffset)
		case h.base < expect:
			err = fmt.Errorf("segment base offset %d, below %d", h.base, expect)
		case h.last() >= p.End:
			err = fmt.Errorf("segment offsets %d-%d reach the next file's %d", h.base, h.last(), p.End)
		case h.tsMicros < lastTs:
			err = fmt.Errorf("segment timestamp %d before the previous %d", h.tsMicros, lastTs)
		}
		if err == nil {
			if bad >= 0 {
				p.Damaged = append(p.Damaged, DamagedRange{StartByte: bad, EndByte: pos, Reason: reason})
				bad = -1
			}
			if cur == nil {
				p.Runs = append(p.Runs, SplitRun{StartByte: pos, FirstOffset: h.base})
				cur = &p.Runs[len(p.Runs)-1]
			}
			pos += h.size()
			cur.EndByte, cur.NextOffset = pos, h.last()+1
			expect, lastTs = cur.NextOffset, h.tsMicros
			continue
		}
		cur = nil
		if bad < 0 {
			bad, reason = pos, err.Error()
		}
		pos = resync(f, pos+1, p.Size)
	}
	if bad >= 0 {
		p.Damaged = append(p.Damaged, DamagedRange{StartByte: bad, EndByte: p.Size, Reason: reason})
	}
	// The offsets of each damaged range: from the end of the run before it
	// (or the file's base) to the start of the run after it (or the next
	// file's name).
	for i := range p.Damaged {
		d := &p.Damaged[i]
		first, next := p.Base, p.End
		for _, r := range p.Runs {
			if r.EndByte <= d.StartByte {
				first = r.NextOffset
			} else if r.StartByte >= d.EndByte {
				next = r.FirstOffset
				break
			}
		}
		if next > first {
			d.FirstOffset, d.LastOffset = first, next-1
		}
	}
	return nil
}

// splitName is the name a run waits under before it is renamed into the log.
func splitName(base uint64) string { return segName(base) + splitSuffix }

// Apply carries the plan out in the order described at the top of this
// file: the original goes to keep (a path outside the log directory, e.g.
// fsck's quarantine/partitions/<id>/<file>; its directory is created), the
// runs become files of the log, and the marker lists each damaged range's
// offsets with note. When Apply returns nil everything is durable. On error,
// a crash or not, the directory is consistent (same place) and
// FinishSplits completes or undoes what was started.
func (p *SplitPlan) Apply(keep, note string) error {
	return applySplitFS(vfs.OS, p, keep, note)
}

func applySplitFS(fsys fileSystem, p *SplitPlan, keep, note string) error {
	src := join(p.Dir, p.File)
	for _, r := range p.Runs {
		if err := copyRun(fsys, src, join(p.Dir, splitName(r.FirstOffset)), r); err != nil {
			for _, r := range p.Runs {
				_ = fsys.Remove(join(p.Dir, splitName(r.FirstOffset)))
			}
			return fmt.Errorf("split %s: %w", src, err)
		}
	}
	if err := fsys.SyncDir(p.Dir); err != nil {
		return fmt.Errorf("split %s: %w", src, err)
	}
	pending := newMarkerLine(OffsetRange{First: p.Base, Last: p.End - 1}, pendingNote+" "+p.File+" "+note)
	if err := editQuarantineFS(fsys, p.Dir, func(ls []markerLine) []markerLine { return append(ls, pending) }); err != nil {
		return fmt.Errorf("split %s: %w", src, err)
	}
	if err := mkdirDurable(fsys, filepath.Dir(keep)); err != nil {
		return fmt.Errorf("split %s: %w", src, err)
	}
	if err := fsys.Rename(src, keep); err != nil {
		return fmt.Errorf("split %s: move to %s: %w", src, keep, err)
	}
	if err := fsys.Remove(join(p.Dir, idxName(p.Base))); err != nil {
		return fmt.Errorf("split %s: %w", src, err)
	}
	// The new name first: a crash between the two syncs leaves the file in
	// both places (the original still in the log), never in neither.
	for _, d := range []string{filepath.Dir(keep), p.Dir} {
		if err := fsys.SyncDir(d); err != nil {
			return fmt.Errorf("split %s: %w", src, err)
		}
	}
	if _, err := finishSplitsFS(fsys, p.Dir); err != nil {
		return fmt.Errorf("split %s: %w", src, err)
	}
	return nil
}

// copyRun writes bytes [r.StartByte, r.EndByte) of src to dst, fdatasyncs
// it and reads it back: it must hold exactly r's offsets in whole segments.
func copyRun(fsys fileSystem, src, dst string, r SplitRun) error {
	in, err := fsys.OpenFile(src, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	buf := make([]byte, min(r.EndByte-r.StartByte, keepChunk))
	for at := r.StartByte; at < r.EndByte && err == nil; {
		n := min(int64(len(buf)), r.EndByte-at)
		if _, err = in.ReadAt(buf[:n], at); err == nil {
			_, err = out.Write(buf[:n])
		}
		at += n
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	first, next, err := checkRunFile(fsys, dst)
	if err == nil && (first != r.FirstOffset || next != r.NextOffset) {
		err = fmt.Errorf("%s holds offsets %d-%d, want %d-%d: %w", dst, first, next-1, r.FirstOffset, r.NextOffset-1, ErrCorrupt)
	}
	return err
}

// checkRunFile reads a whole segment file and returns its offsets
// [first, next); any damage in it is an error wrapping ErrCorrupt.
func checkRunFile(fsys fileSystem, path string) (first, next uint64, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	sc := scanner{f: f, size: size}
	var dec []byte
	lastTs := int64(0)
	for pos := int64(0); pos < size; {
		h, err := sc.wholeSegment(pos, &dec)
		if err == nil && first != 0 && h.base != next {
			err = fmt.Errorf("segment base offset %d, expected %d", h.base, next)
		}
		if err == nil && first != 0 && h.tsMicros < lastTs {
			err = fmt.Errorf("segment timestamp %d before the previous %d", h.tsMicros, lastTs)
		}
		lastTs = h.tsMicros
		if err != nil {
			return 0, 0, &CorruptionError{File: path, StartByte: pos, EndByte: size, Reason: err.Error()}
		}
		if first == 0 {
			first = h.base
		}
		next, pos = h.last()+1, pos+h.size()
	}
	return first, next, nil
}
