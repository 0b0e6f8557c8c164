package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// View is a data directory as its server would serve it after recovery,
// read-only: the metadata (the snapshot and the commit log's metadata
// entries), the commit log, and the rule that says which part of each log's
// files the server keeps. Dump and replay read logs through it, so the records
// only the commit log holds are theirs too, and unsynced bytes past a log's
// durable end (whatever they are) are not.
type View struct {
	Meta    *Meta // nil when unreadable (MetaErr)
	MetaErr error
	WAL     *WAL
	Rule    *Rule
	// Small is the shared file of small partitions (<data>/small, package
	// entrylog) as entrylog.Check read it; SmallDir its directory.
	Small    *entrylog.CheckReport
	SmallDir string
}

// Load reads dataDir's metadata, summaries and commit log. The commit
// log's segments are kept in memory only for the logs want selects (nil =
// none), and only those past their log's durable end (what is served from
// the commit log): at most the commit log's size.
func Load(dataDir string, want func(id [16]byte) bool) (*View, error) {
	v := &View{}
	v.Meta, v.MetaErr = ReadMeta(dataDir)
	var covers uint64
	if v.Meta != nil {
		covers = v.Meta.Covers
	}
	rule, err := ReadRule(dataDir, nil)
	if err != nil {
		return nil, err
	}
	firstBase := map[[16]byte]uint64{}
	keepBytes := func(id [16]byte, base, end uint64) bool {
		if want == nil || !want(id) {
			return false
		}
		if _, ok := firstBase[id]; !ok {
			firstBase[id] = base
		}
		keep := max(firstBase[id], 1)
		if s, ok := rule.Sums[id]; ok {
			keep = max(keep, s.NextOffset)
		}
		return end > keep
	}
	if v.WAL, err = ReadWAL(dataDir, covers, keepBytes); err != nil {
		return nil, err
	}
	rule.WAL, v.Rule = v.WAL, rule
	if v.Meta != nil {
		v.Meta.ApplyCommitLog(v.WAL.Meta)
	}
	v.SmallDir = filepath.Join(dataDir, layout.Small)
	if v.Small, err = entrylog.Check(vfs.OS, v.SmallDir); err != nil {
		return nil, err
	}
	return v, nil
}

// SmallFirst is the first offset the shared file holds of small partition
// d (ok=false: it holds none, or d has a directory).
func (v *View) SmallFirst(d LogDir) (uint64, bool) {
	if v.Small == nil || d.DLQ {
		return 0, false
	}
	if exts := v.Small.Segments[d.ID]; len(exts) > 0 {
		return exts[0].Base, true
	}
	return 0, false
}

// eachSmall streams small partition d's segments from the shared file
// (from the one holding offset from on) and returns the offset after the
// last one; ok=false when the shared file holds none of d's.
func (v *View) eachSmall(d LogDir, from uint64, fn func(s SegInfo, lsn uint64, msgs []segment.Message) bool) (next uint64, stopped, ok bool, err error) {
	if v.Small == nil || d.DLQ {
		return 0, false, false, nil
	}
	exts := v.Small.Segments[d.ID]
	if len(exts) == 0 {
		return 0, false, false, nil
	}
	var buf segment.ReadBuffer
	for _, e := range exts {
		if next != 0 && e.Base != next {
			return next, false, true, fmt.Errorf("%s: the shared file's segments end at offset %d, then start at %d: %w", d.Rel, next-1, e.Base, ErrNotRecoverable)
		}
		next = e.Next()
		if e.Next() <= from {
			continue
		}
		seg, err := entrylog.ReadSegment(vfs.OS, v.SmallDir, d.ID, e)
		if err != nil {
			return next, false, true, err
		}
		info, msgs, err := segment.DecodeSegment(seg, &buf)
		if err != nil {
			return next, false, true, fmt.Errorf("%s: the shared file's segment at offset %d: %w", d.Rel, e.Base, err)
		}
		s := SegInfo{File: filepath.Join(layout.Small, entrylog.FileName(e.File)), Pos: e.Pos, Bytes: info.Bytes, FirstOffset: info.FirstOffset,
			Count: info.Count, TsMicros: info.TimestampMicros, Codec: info.Codec.String()}
		if !fn(s, 0, msgs) {
			return next, true, true, nil
		}
	}
	return next, false, true, nil
}

// EachRecovered streams log d's records as the server would serve them after
// recovery, in offset order from the segment holding offset from: the
// segments of its files below its durable end (all of them for a log not
// written behind the commit log), then the commit log's segments from there
// on where they continue it. fn gets each segment (lsn 0 for a file's; File
// `commitlog` for the commit log's) and its records, which alias memory valid
// until fn returns; it returns false to stop. Damage below the durable end is
// a *segment.CorruptionError, a gap before the commit log's segments wraps
// ErrNotRecoverable. The errors do not name d: the caller does (dump and
// replay prefix d.Rel), so that a message names the partition once.
func (v *View) EachRecovered(d LogDir, from uint64, fn func(s SegInfo, lsn uint64, msgs []segment.Message) bool) error {
	keep, behind := v.Rule.KeepBelow(d.ID, d.DLQ)
	if _, serr := os.Stat(d.Path); os.IsNotExist(serr) {
		// A small partition: its directory is virtual, its records are the
		// shared file's segments, then the commit log's.
		next, stopped, ok, err := v.eachSmall(d, from, fn)
		if ok {
			if err != nil || stopped {
				return err
			}
			if behind && next < keep {
				return fmt.Errorf("%s: the shared file holds offsets up to %d, but offsets below %d were synced: %w", d.Rel, next-1, keep, ErrNotRecoverable)
			}
			return v.eachWAL(d, from, next, fn)
		}
	}
	if !behind {
		return ScanSegments(d.Path, from, func(s SegInfo, msgs []segment.Message) bool { return fn(s, 0, msgs) })
	}
	next := uint64(0) // where the file's segments read so far end
	stopped := false
	err := ScanSegments(d.Path, from, func(s SegInfo, msgs []segment.Message) bool {
		if s.FirstOffset+uint64(s.Count) > keep {
			return false // from here on the file holds what was written unsynced
		}
		next = s.FirstOffset + uint64(s.Count)
		if !fn(s, 0, msgs) {
			stopped = true
			return false
		}
		return true
	})
	if errors.Is(err, os.ErrNotExist) && keep == 1 {
		err = nil // nothing of it was synced: the server makes the directory
	}
	var ce *segment.CorruptionError
	if errors.As(err, &ce) && (ce.FirstOffset >= keep || next >= keep) {
		err = nil // damage past the durable end: unsynced bytes the server cuts
	}
	if err != nil || stopped {
		return err
	}
	switch {
	case next == 0:
		// No segment of the files was read (from is past them, or nothing of
		// the log was synced): the server's offsets continue at keep.
		next = keep
	case next < keep:
		return fmt.Errorf("the log's files end at offset %d, but offsets below %d were synced: %w", next-1, keep, ErrNotRecoverable)
	}
	return v.eachWAL(d, from, next, fn)
}

// eachWAL streams the commit log's segments of d that continue it at next.
func (v *View) eachWAL(d LogDir, from, next uint64, fn func(s SegInfo, lsn uint64, msgs []segment.Message) bool) error {
	var buf segment.ReadBuffer
	for _, seg := range v.WAL.Logs[d.ID].Segments() {
		switch {
		case seg.End() <= next:
			continue
		case seg.Base != next:
			return fmt.Errorf("the log ends at offset %d but the commit log continues at %d (entry LSN %d): %w", next-1, seg.Base, seg.LSN, ErrNotRecoverable)
		case seg.Bytes == nil:
			return fmt.Errorf("commit-log entry LSN %d was not read", seg.LSN)
		}
		next = seg.End()
		if seg.End() <= from {
			continue
		}
		info, msgs, err := segment.DecodeSegment(seg.Bytes, &buf)
		if err != nil {
			return fmt.Errorf("commit-log entry LSN %d: %w", seg.LSN, err)
		}
		s := SegInfo{File: layout.CommitLog, Bytes: info.Bytes, FirstOffset: info.FirstOffset, Count: info.Count,
			TsMicros: info.TimestampMicros, Codec: info.Codec.String()}
		if !fn(s, seg.LSN, msgs) {
			return nil
		}
	}
	return nil
}

// RecoveredNext is the next offset of log d after the server's recovery
// (NextOffset when nothing is recovered from the commit log), and the offset
// the server trusts its files below (0 when it verifies them as they are).
func (v *View) RecoveredNext(d LogDir, fileNext uint64) (next, keep uint64) {
	keep, behind := v.Rule.KeepBelow(d.ID, d.DLQ)
	small := uint64(0) // a small partition's end in the shared file
	if v.Small != nil && !d.DLQ && fileNext == 0 {
		if exts := v.Small.Segments[d.ID]; len(exts) > 0 {
			small = exts[len(exts)-1].Next()
			fileNext = small
		}
	}
	if !behind {
		return fileNext, 0
	}
	next = max(keep, small)
	for _, seg := range v.WAL.Logs[d.ID].Segments() {
		switch {
		case seg.End() <= next:
		case seg.Base == next:
			next = seg.End()
		default:
			return next, keep // a gap: the server stops here (comb fsck reports it)
		}
	}
	return next, keep
}

// WALOnlyLogs returns the logs of live partitions and queues that the commit
// log holds records of but whose directory is missing (nothing of them was
// synced; the server makes the directory at its next start).
func (v *View) WALOnlyLogs(dataDir string, onDisk []LogDir) []LogDir {
	have := map[[16]byte]bool{}
	for _, d := range onDisk {
		have[d.ID] = true
	}
	var out []LogDir
	for id, l := range v.WAL.Logs {
		if have[id] || len(l.Segs) == 0 || v.Meta == nil {
			continue
		}
		sub := layout.Partitions
		if l.DLQ {
			sub = layout.DLQ
			if _, ok := v.Meta.Queues[id]; !ok {
				continue
			}
		} else if _, ok := v.Meta.Partitions[id]; !ok {
			continue
		}
		rel := filepath.Join(sub, IDString(id))
		out = append(out, LogDir{ID: id, Path: filepath.Join(dataDir, rel), Rel: rel, DLQ: l.DLQ})
		have[id] = true
	}
	if v.Small != nil && v.Meta != nil {
		// Small partitions: no directory, records in the shared file.
		for id := range v.Small.Segments {
			if _, ok := v.Meta.Partitions[id]; !ok || have[id] {
				continue
			}
			rel := filepath.Join(layout.Partitions, IDString(id))
			out = append(out, LogDir{ID: id, Path: filepath.Join(dataDir, rel), Rel: rel})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out
}

// NameOf names a log for reports: its partition's queue and name, or its
// queue's for a DLQ.
func (v *View) NameOf(id [16]byte, dlq bool) PartInfo {
	if v.Meta == nil {
		return PartInfo{ID: id}
	}
	if dlq {
		return PartInfo{ID: id, QueueID: id, Queue: v.Meta.Queues[id], Name: "(dlq)"}
	}
	return v.Meta.Partitions[id]
}
