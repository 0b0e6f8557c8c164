package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment/dedup"
)

// OpenFrom opens the log in dir keeping only offsets below keepBelow
// (issue 14; docs/format.md section 5, "Opening below a commit log"). The
// caller promises that every offset below keepBelow was synced, and that it
// holds every append from keepBelow on elsewhere (its commit log) and will
// replay them with AppendSegment. Everything the files hold from keepBelow on
// was written but never known to be synced, so it may be anything: whole
// segments, torn ones, zeros or garbage, anywhere after the last durable
// segment (in the middle of a file too, with valid-looking segments after
// it), and whole newer files created by a rotation whose directory entry or
// data never became durable (Options.DeferRotationSync). OpenFrom does not
// look at it:
//
//   - files whose first offset is at or after keepBelow are removed, with
//     their index files;
//   - the file holding keepBelow-1 is cut right after the segment ending at
//     keepBelow-1 (no quarantine copy: the commit log holds those bytes);
//   - dedup.idx entries for offsets at or after keepBelow are dropped;
//
// and then opens the log as Open does. NextOffset() is keepBelow afterwards.
// What was cut and removed is in the report's Unsynced field.
//
// Below keepBelow Open's rules apply unchanged: a damaged segment is
// corruption, and a gap between files must be covered by the QUARANTINE
// marker. When the log's data ends before keepBelow-1 (a synced segment is
// missing), or a segment straddles keepBelow (the files and the caller's
// commit log disagree), OpenFrom returns a *CorruptionError naming the
// missing offsets and changes nothing. keepBelow == 1 keeps nothing: every
// segment file is removed and the log starts afresh at offset 1. A log
// whose older offsets retention removed has an empty newest file named
// keepBelow (a rotation made it before retention removed the rest): it is
// kept, emptied, to carry the next offset; likewise when the offsets just
// below keepBelow are a quarantined gap.
//
// Durability: the removals and the directory, the cut of the file and the
// cut of dedup.idx are synced before OpenFrom returns, so a crash after it
// cannot bring the cut bytes back behind segments appended later. A crash
// during OpenFrom leaves a directory on which OpenFrom with the same
// keepBelow gives the same log: each step only removes bytes at or after
// keepBelow, which every later run removes too.
//
// Errors: a *CorruptionError as above or as Open's; an error for keepBelow
// 0; I/O errors wrapped with the path.
func OpenFrom(dir string, opts Options, keepBelow uint64) (*Log, *RecoveryReport, error) {
	return openLogFrom(opts.fsOf(), dir, opts, keepBelow)
}

func openLogFrom(fsys fileSystem, dir string, opts Options, keepBelow uint64) (*Log, *RecoveryReport, error) {
	if keepBelow == 0 {
		return nil, nil, fmt.Errorf("segment log %s: open from offset 0: offsets start at 1", dir)
	}
	rep := &RecoveryReport{Unsynced: UnsyncedCut{KeepBelow: keepBelow}}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) && keepBelow > 1 {
		return nil, rep, fmt.Errorf("segment log %s: %w", dir, &CorruptionError{File: dir, FirstOffset: 1, LastOffset: keepBelow - 1,
			Reason: fmt.Sprintf("the log directory is missing, but offsets below %d were synced", keepBelow)})
	}
	if err == nil {
		l := newLog(fsys, dir, opts)
		if err := l.cutUnsynced(names, keepBelow, rep); err != nil {
			return nil, rep, fmt.Errorf("segment log %s: %w", dir, err)
		}
	}
	l, rep, err := openLogReport(fsys, dir, opts, rep)
	if err != nil {
		return nil, rep, err
	}
	if next := l.NextOffset(); next != keepBelow {
		_ = l.Close()
		return nil, rep, fmt.Errorf("segment log %s: opened below offset %d but the log ends before %d: %w", dir, keepBelow, next, ErrCorrupt)
	}
	return l, rep, nil
}

// keepPlan is what cutUnsynced found before it changes anything.
type keepPlan struct {
	file       uint64 // base of the file holding keepBelow-1 (0 = none)
	cutAt      int64  // where that file is cut
	size       int64  // its size now
	carrier    bool   // keep an empty file named keepBelow to carry the next offset
	carrierHas bool   // that file exists
}

// cutUnsynced removes from the directory everything at or after keepBelow
// (see OpenFrom), after checking that the offsets below it are all there.
func (l *Log) cutUnsynced(names []string, keepBelow uint64, rep *RecoveryReport) error {
	var bases []uint64 // segment files, ascending (List sorts; the names are zero-padded)
	var idxBases []uint64
	for _, n := range names {
		if base, ok := parseSegName(n); ok {
			bases = append(bases, base)
		} else if base, ok := parseIdxName(n); ok {
			idxBases = append(idxBases, base)
		}
	}
	plan, err := l.planKeep(bases, keepBelow)
	if err != nil {
		return err
	}
	cut := &rep.Unsynced
	for _, base := range bases {
		if base < keepBelow || (plan.carrier && base == keepBelow) {
			continue
		}
		if err := l.keepUnsynced(segName(base), 0, cut); err != nil {
			return err
		}
		size, err := l.removeFile(base)
		if err != nil {
			return err
		}
		cut.Removed = append(cut.Removed, join(l.dir, segName(base)))
		cut.RemovedBytes += size
	}
	removedIdx := false
	for _, base := range idxBases {
		if base >= keepBelow {
			if err := l.fs.Remove(join(l.dir, idxName(base))); err != nil {
				return fmt.Errorf("remove %s: %w", idxName(base), err)
			}
			removedIdx = true
		}
	}
	if plan.file != 0 && plan.size > plan.cutAt {
		if err := l.keepUnsynced(segName(plan.file), plan.cutAt, cut); err != nil {
			return err
		}
		if err := l.truncateFile(segName(plan.file), plan.cutAt); err != nil {
			return err
		}
		cut.File, cut.At, cut.Bytes = join(l.dir, segName(plan.file)), plan.cutAt, plan.size-plan.cutAt
	}
	if plan.carrier {
		if err := l.emptyCarrier(keepBelow, plan.carrierHas, cut); err != nil {
			return err
		}
	}
	if len(cut.Removed) > 0 || removedIdx || (plan.carrier && !plan.carrierHas) {
		// Removed names must stay removed: a file named at or after
		// keepBelow that came back after a crash would overlap what the
		// replay appends.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	n, err := dedup.CutFile(l.fs, l.dir, keepBelow, false)
	cut.DedupEntries = n
	if err != nil {
		return err
	}
	n, err = dedup.RemoveRunsFrom(l.fs, l.dir, keepBelow, false)
	cut.DedupEntries += n
	if err != nil {
		return fmt.Errorf("cut dedup runs: %w", err)
	}
	return nil
}

// planKeep finds where the offsets below keepBelow end, reading only: the
// file holding keepBelow-1 and the position right after its segment ending
// at keepBelow-1. Missing or damaged offsets below keepBelow are a
// *CorruptionError.
func (l *Log) planKeep(bases []uint64, keepBelow uint64) (keepPlan, error) {
	var p keepPlan
	hasCarrier := false
	for _, b := range bases {
		if b < keepBelow {
			p.file = b
		}
		hasCarrier = hasCarrier || b == keepBelow
	}
	if keepBelow == 1 {
		return p, nil // keep nothing
	}
	if p.file == 0 {
		if hasCarrier {
			// Retention removed every file below the newest one, which
			// holds nothing synced: it carries the next offset.
			p.carrier, p.carrierHas = true, true
			return p, nil
		}
		return p, &CorruptionError{File: l.dir, FirstOffset: 1, LastOffset: keepBelow - 1,
			Reason: fmt.Sprintf("no segment file holds offsets below %d, which were synced", keepBelow)}
	}
	end, err := l.durableEnd(p.file, keepBelow)
	if err != nil {
		return p, err
	}
	p.cutAt, p.size = end.pos, end.size
	if end.next == keepBelow {
		return p, nil
	}
	// The file ends (cleanly) before keepBelow: only a quarantined gap may
	// lie between, and then a file named keepBelow carries the next offset.
	q, err := readQuarantineFS(l.fs, l.dir)
	if err != nil {
		return p, err
	}
	if !QuarantineCovers(q, end.next, keepBelow-1) {
		return p, &CorruptionError{File: join(l.dir, segName(p.file)), StartByte: end.pos, EndByte: end.size,
			FirstOffset: end.next, LastOffset: keepBelow - 1,
			Reason: fmt.Sprintf("the file's segments end before offset %d, but offsets below %d were synced (no %s marker covers the gap)", end.next, keepBelow, QuarantineFileName)}
	}
	p.carrier, p.carrierHas = true, hasCarrier
	return p, nil
}

// keepEnd is where the synced offsets of one file end: byte pos after the
// last whole segment below keepBelow, next the offset after it.
type keepEnd struct {
	pos, size int64
	next      uint64
}

// durableEnd reads the file starting at base up to the segment ending at
// keepBelow-1 and returns the position after it, checking every segment on
// the way as Open checks a newest file: index entries are trusted back to
// the last one below keepBelow whose header matches the file and whose
// checksum verifies; every segment after it is read and verified. Entries
// and bytes at or after keepBelow are not looked at. A segment below
// keepBelow that fails, or one that straddles keepBelow, is a
// *CorruptionError; a clean end of the file before keepBelow returns
// next < keepBelow.
func (l *Log) durableEnd(base, keepBelow uint64) (keepEnd, error) {
	path := join(l.dir, segName(base))
	f, err := l.fs.OpenFile(path, os.O_RDONLY)
	if err != nil {
		return keepEnd{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return keepEnd{}, err
	}
	sc := scanner{f: f, size: size}
	pos, next, lastTs := int64(0), base, int64(0)
	if b, err := l.fs.ReadFile(join(l.dir, idxName(base))); err == nil && index.CheckHeader(b, base) == nil {
		ents := index.Entries(b[index.HeaderSize : index.HeaderSize+index.ValidEntries(b[index.HeaderSize:], base)*index.EntrySize])
		for k := ents.Len(); k > 0; k-- {
			e := ents.At(k - 1)
			if e.Last() >= keepBelow {
				continue
			}
			h, err := sc.header(e.Pos)
			if err != nil || h.base != e.Base || h.count != e.Count || h.tsMicros != e.TimestampMicros {
				continue
			}
			if _, err := sc.segment(e.Pos, h); err != nil {
				continue
			}
			pos, next, lastTs = e.Pos+h.size(), h.last()+1, h.tsMicros
			break
		}
	}
	for next < keepBelow && pos < size {
		h, err := sc.header(pos)
		if err == nil && h.base != next {
			err = fmt.Errorf("segment base offset %d, expected %d", h.base, next)
		}
		if err == nil && h.tsMicros < lastTs {
			err = fmt.Errorf("segment timestamp %d before the previous %d", h.tsMicros, lastTs)
		}
		if err == nil {
			_, err = sc.segment(pos, h)
		}
		if err == nil && h.last() >= keepBelow {
			return keepEnd{}, &CorruptionError{File: path, StartByte: pos, EndByte: pos + h.size(),
				FirstOffset: h.base, LastOffset: h.last(), Tail: record.TailCorrupt,
				Reason: fmt.Sprintf("segment holds offsets %d-%d across %d, where the synced offsets end: the file and the commit log disagree", h.base, h.last(), keepBelow)}
		}
		if err != nil {
			ce := &CorruptionError{File: path, StartByte: pos, EndByte: size, FirstOffset: next, LastOffset: keepBelow - 1,
				Reason: fmt.Sprintf("offsets below %d were synced, but %v", keepBelow, err)}
			if !wholeSegmentFollows(f, pos, size, ce) {
				ce.Tail = endTail(&sc, pos)
			}
			ce.FirstOffset, ce.LastOffset = next, keepBelow-1 // what is missing, whatever follows
			return keepEnd{}, ce
		}
		pos, next, lastTs = pos+h.size(), h.last()+1, h.tsMicros
	}
	return keepEnd{pos: pos, size: size, next: next}, nil
}

// keepUnsynced copies the non-zero bytes of segment file name from byte from
// on to the quarantine directory (keepCut) when Options.KeepUnsynced is set,
// and notes the copy in cut.Kept.
func (l *Log) keepUnsynced(name string, from int64, cut *UnsyncedCut) error {
	if !l.opts.KeepUnsynced {
		return nil
	}
	f, err := l.fs.OpenFile(join(l.dir, name), os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("keep the unsynced bytes of %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size <= from {
		return err
	}
	kept, err := l.keepCut(f, name, from, size)
	if err != nil {
		return err
	}
	if kept != "" {
		cut.Kept = append(cut.Kept, kept)
	}
	return nil
}

// removeFile removes a segment file and its index file (the index first, so
// no index outlives its file) and returns the segment file's size.
func (l *Log) removeFile(base uint64) (int64, error) {
	path := join(l.dir, segName(base))
	var size int64
	if f, err := l.fs.OpenFile(path, os.O_RDONLY); err == nil {
		size, _ = f.Size()
		_ = f.Close()
	}
	if err := l.fs.Remove(join(l.dir, idxName(base))); err != nil {
		return 0, fmt.Errorf("remove %s: %w", idxName(base), err)
	}
	if err := l.fs.Remove(path); err != nil {
		return 0, fmt.Errorf("remove %s: %w", segName(base), err)
	}
	return size, nil
}

// truncateFile cuts the segment file name to size bytes and fdatasyncs the
// cut.
func (l *Log) truncateFile(name string, size int64) error {
	f, err := openAppend(l.fs, join(l.dir, name), false)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cut %s at byte %d: %w", name, size, err)
	}
	return nil
}

// emptyCarrier leaves an empty, synced file named keepBelow (see OpenFrom),
// creating it when missing (the caller then syncs the directory), and
// reports the bytes it cut.
func (l *Log) emptyCarrier(keepBelow uint64, exists bool, cut *UnsyncedCut) error {
	name := segName(keepBelow) // its index file is gone with the others at or after keepBelow
	f, err := openAppend(l.fs, join(l.dir, name), true)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	size, err := f.Size()
	if err == nil && size > 0 {
		if err = f.Truncate(0); err == nil {
			cut.File, cut.At, cut.Bytes = join(l.dir, name), 0, size
		}
	}
	if err == nil && (size > 0 || !exists) {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("empty %s: %w", name, err)
	}
	return nil
}

// parseIdxName is parseSegName for segment index files.
func parseIdxName(name string) (uint64, bool) {
	if len(name) != 24 || name[20:] != ".idx" {
		return 0, false
	}
	return parseSegName(name[:20] + ".seg")
}
