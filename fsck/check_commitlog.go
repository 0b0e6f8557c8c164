package fsck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
)

// checkCommitLog turns the commit log's own state into findings (issue 14):
// a torn or damaged last batch of the newest file was never acknowledged
// (its fdatasync never returned) and the server zeroes it; anything else is
// damage to acknowledged entries.
func (c *checker) checkCommitLog() {
	w := c.wal
	if !w.Present {
		return
	}
	t := &c.rep.Totals.CommitLog
	t.Files, t.Entries, t.FirstLSN, t.LastLSN = w.Files, w.Entries, w.First, w.Last
	t.PushRecords, t.Transactions, t.Checkpoints = w.PushRecords, w.TxEntries, w.Checkpoints
	if errors.Is(w.Err, commitlog.ErrShortFile) {
		// Not a tail: the server refuses the file (commitlog.judgeTail).
		c.rep.add(Finding{Kind: KindCommitLogShortFile, Severity: SeverityDamaged, File: filepath.Join(dirCommitLog, w.TailFile),
			StartByte: w.TailStart, EndByte: w.TailEnd,
			Detail: fmt.Sprintf("%v; the last entry read is LSN %d (the checks below judge what comes before the cut; under --sync never, which syncs no preallocation, a power cut can leave this too)", w.Err, w.Last)})
		return
	}
	if w.Err != nil {
		c.rep.add(Finding{Kind: KindCommitLogCorrupt, Severity: SeverityDamaged, File: dirCommitLog,
			Detail: fmt.Sprintf("%v; the server refuses to start on it, and the entries from the damage on are not read (the checks below judge what comes before it)", w.Err)})
	}
	for _, b := range w.BadEntries {
		c.rep.add(Finding{Kind: KindCommitLogCorrupt, Severity: SeverityDamaged, File: dirCommitLog,
			Detail: "an entry whose batch verifies does not decode (a bug or a newer format; the server refuses to start): " + b})
	}
	f := Finding{File: filepath.Join(dirCommitLog, w.TailFile), StartByte: w.TailStart, EndByte: w.TailEnd}
	switch w.Tail {
	case record.TailTorn, record.TailDamaged:
		f.Kind, f.Severity = KindCommitLogTornTail, SeverityRepairable
		what := "an incomplete batch"
		if w.Tail == record.TailDamaged {
			what = "a batch of full length that fails its checksum"
		}
		f.Detail = fmt.Sprintf("the commit log's newest file ends in %s after its last verified batch (LSN %d): a torn write of a batch whose fdatasync never returned, never acknowledged; the server zeroes it at start", what, w.Last)
		f.Repair = fmt.Sprintf("copy bytes [%d,%d) to %s/ and zero them (the commit log's own recovery)", w.TailStart, w.TailEnd, filepath.Join(dirQuarantine, dirCommitLog))
		c.plan(f, repairPlan{kind: planCommitLogTail})
	case record.TailCorrupt:
		f.Kind, f.Severity = KindCommitLogCorrupt, SeverityDamaged
		after := fmt.Sprintf("after LSN %d", w.Last)
		if w.Last == 0 {
			after = "from the damage on" // none before it was read
		}
		f.Detail = fmt.Sprintf("the commit log's newest file is damaged at bytes [%d,%d) and a verified batch follows: not a torn write under --sync always, so acknowledged entries %s are unreadable; the server refuses to start (under --sync interval or never it cuts them: those policies may lose acknowledged writes)", w.TailStart, w.TailEnd, after)
		c.rep.add(f)
	}
}

// walLogState is what the server's start-up makes of one log written behind
// the commit log: its files cut to the durable region, then the commit log's
// segments appended where they continue it (broker/open.go, replaySegment).
type walLogState struct {
	keep     uint64 // the durable region ends before it
	next     uint64 // the log's next offset after the replay
	replayed int64  // records appended from the commit log
	damaged  bool   // the replay stops here: the server takes the log out of service
}

// checkReplay judges every log the commit log writes to (issue 14: every
// acknowledged record of the commit log is in its partition file after
// recovery): for each push or DLQ entry, in LSN order, either the log already
// holds its offsets (below the durable end, where the file's segment must be
// the entry's), or its base is exactly where the log continues (the server
// appends it); an entry past the end leaves offsets in neither: damage. Logs
// whose directory is missing are judged too (the server makes it when nothing
// of the log was synced). It fills c.recovered with every log's next offset
// after the server's recovery, for the cursor checks.
func (c *checker) checkReplay() {
	c.recovered = map[[16]byte]walLogState{}
	byID := map[[16]byte]datadir.LogDir{}
	for _, d := range c.logs {
		byID[d.ID] = d
		if s := c.scans[d.Rel]; s != nil && s.Region == nil && !d.DLQ {
			c.recovered[d.ID] = walLogState{next: s.NextOffset}
		}
	}
	var ids [][16]byte
	for id := range c.wal.Logs {
		ids = append(ids, id)
	}
	for id := range c.rule.Sums {
		if _, ok := c.wal.Logs[id]; !ok {
			ids = append(ids, id)
		}
	}
	for id := range c.wal.Created {
		if _, ok := c.wal.Logs[id]; !ok {
			if _, ok := c.rule.Sums[id]; !ok {
				ids = append(ids, id)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	for _, id := range ids {
		d, haveDir := byID[id]
		dlq := false
		if l := c.wal.Logs[id]; l != nil {
			dlq = l.DLQ
		} else if haveDir {
			dlq = d.DLQ
		} else if c.meta != nil {
			_, dlq = c.meta.Queues[id]
		}
		if !c.live(id, dlq) {
			continue // a deleted queue's: the server skips its entries
		}
		keep, ok := c.rule.KeepBelow(id, dlq)
		if !ok {
			continue
		}
		if !haveDir && !dlq && c.small != nil && len(c.small.Segments[id]) > 0 {
			c.recovered[id] = c.replaySmall(id, keep, c.wal.Logs[id])
			continue
		}
		if !haveDir {
			sub := dirPartitions
			if dlq {
				sub = dirDLQ
			}
			d = datadir.LogDir{ID: id, Path: filepath.Join(c.dir, sub, datadir.IDString(id)), Rel: filepath.Join(sub, datadir.IDString(id)), DLQ: dlq}
			c.checkMissingDir(d, keep)
		}
		st := c.replayLog(d, keep, c.wal.Logs[id])
		if !dlq && (!haveDir || c.scans[d.Rel] != nil && c.scans[d.Rel].Region != nil) {
			c.recovered[id] = st
		}
	}
	if c.small != nil {
		// Small partitions neither a summary nor the commit log names: the
		// server opens them from the shared file alone.
		for id := range c.small.Segments {
			if _, ok := c.recovered[id]; !ok && c.live(id, false) {
				c.recovered[id] = c.replaySmall(id, 1, nil)
			}
		}
	}
}

// live reports whether the metadata (snapshot and commit log) names the
// partition, or the queue of a DLQ log: the server replays only those.
func (c *checker) live(id [16]byte, dlq bool) bool {
	if c.meta == nil {
		return true
	}
	if dlq {
		_, ok := c.meta.Queues[id]
		return ok
	}
	_, ok := c.meta.Partitions[id]
	return ok
}

// checkMissingDir judges a log the metadata names, whose files the server
// must keep below keep, but whose directory is gone: fine when nothing of it
// was synced (keep 1: the server makes the directory and replays), damage
// otherwise.
func (c *checker) checkMissingDir(d datadir.LogDir, keep uint64) {
	if keep <= 1 {
		return
	}
	queue, part := c.names(d)
	c.rep.add(Finding{Kind: KindMissingOffsets, Severity: SeverityDamaged, Queue: queue, Partition: part, PartitionID: datadir.IDString(d.ID),
		File: d.Rel, FirstOffset: 1, LastOffset: keep - 1,
		Detail: fmt.Sprintf("the log directory is missing, but offsets below %d were synced (%s)%s", keep, c.keepSource(d.ID), c.walHolds(d.ID, 1, keep-1))})
}

// replayLog runs the server's replay of l's entries over the log as scanned
// (or over nothing, for a missing directory) and reports what it finds.
func (c *checker) replayLog(d datadir.LogDir, keep uint64, l *datadir.WALLog) walLogState {
	st := walLogState{keep: keep, next: keep}
	s := c.scans[d.Rel]
	if s != nil {
		if s.Region == nil {
			return walLogState{next: s.NextOffset}
		}
		st.next = s.NextOffset
		if s.Region.Err != nil {
			c.regionFinding(d, s)
			st.damaged = true
		}
	}
	queue, part := c.names(d)
	base := Finding{Queue: queue, Partition: part, PartitionID: datadir.IDString(d.ID), File: d.Rel}
	var below []datadir.WALSeg
	var first uint64
	for _, seg := range l.Segments() {
		switch {
		case st.damaged:
		case seg.End() <= st.next:
			if seg.Base < keep {
				below = append(below, seg)
			}
			continue
		case seg.Base == st.next:
			if st.replayed == 0 {
				first = seg.Base
			}
			st.next, st.replayed = seg.End(), st.replayed+int64(seg.Count)
			continue
		default:
			f := base
			f.Kind, f.Severity = KindMissingOffsets, SeverityDamaged
			if seg.Base > st.next {
				f.FirstOffset, f.LastOffset = st.next, seg.Base-1
				f.Detail = fmt.Sprintf("the log ends at offset %d but the commit log continues at %d (entry LSN %d): offsets %d-%d are in neither; the server takes the log out of service",
					st.next-1, seg.Base, seg.LSN, st.next, seg.Base-1)
			} else {
				f.Kind, f.FirstOffset, f.LastOffset = KindCommitLogMismatch, seg.Base, seg.End()-1
				f.Detail = fmt.Sprintf("the commit log's entry LSN %d holds offsets %d-%d across the log's end at %d: the files and the commit log disagree; the server takes the log out of service",
					seg.LSN, seg.Base, seg.End()-1, st.next-1)
			}
			c.rep.add(f)
			st.damaged = true
		}
	}
	if s != nil && len(below) > 0 && s.Region.Err == nil {
		c.compareBelow(d, base, s, below)
	}
	c.rep.Totals.CommitLog.OnlyInCommitLog += st.replayed
	if s != nil && s.Unsynced > 0 || st.replayed > 0 {
		f := base
		f.Kind, f.Severity, f.FirstOffset = KindUnsyncedTail, SeverityInfo, keep
		if st.replayed > 0 {
			f.LastOffset = st.next - 1
		}
		f.Detail = c.unsyncedText(s, keep, first, st)
		if s != nil && s.Unsynced > 0 && st.replayed == 0 && c.walUnread() {
			// The commit log's entries past its damage are unread: they may well
			// hold these bytes, acknowledged. Cutting them would lose them; the
			// server refuses to start until the commit log is seen to.
			f.Detail = fmt.Sprintf("%d bytes written unsynced past offset %d; the commit log is damaged (above), so whether its unread entries hold them is unknown: left as they are", s.Unsynced, keep-1)
		} else if s != nil && s.Unsynced > 0 && st.replayed == 0 && s.Region != nil {
			// Bytes no commit-log entry holds (never acknowledged; after a clean
			// stop, not comb's at all): the server's start cuts them, so does
			// --repair, both keeping them in quarantine.
			f.Severity = SeverityRepairable
			f.Repair = fmt.Sprintf("cut the log after offset %d, keeping the bytes cut in %s", keep-1, dirQuarantine)
			c.plans = append(c.plans, repairPlan{kind: planReopenLog, log: d, region: s.Region, findings: []int{len(c.rep.Findings)}})
		}
		c.rep.add(f)
	}
	return st
}

// walUnread reports whether the commit log holds entries fsck could not
// read: damage that is not a torn tail the server zeroes (what follows it,
// or an entry that does not decode, may hold any log's records).
func (c *checker) walUnread() bool {
	w := c.wal
	return w.Err != nil || w.Tail == record.TailCorrupt || len(w.BadEntries) > 0
}

// unsyncedText says what the server's start-up does with a log's tail.
func (c *checker) unsyncedText(s *logScan, keep, first uint64, st walLogState) string {
	var unsynced int64
	if s != nil {
		unsynced = s.Unsynced
	}
	only := fmt.Sprintf("%d records (offsets %d-%d) are only in the commit log: the server appends them to the log at start", st.replayed, first, st.next-1)
	switch {
	case unsynced > 0 && st.replayed > 0:
		return fmt.Sprintf("%d bytes written unsynced past offset %d: the server cuts them and replays them from the commit log; %s", unsynced, keep-1, only)
	case unsynced > 0:
		return fmt.Sprintf("%d bytes written unsynced past offset %d that no commit-log entry holds (never acknowledged): the server cuts them at start", unsynced, keep-1)
	}
	return only
}

// regionFinding reports segment.PlanFrom's refusal (offsets below keep
// missing, damaged, or a segment across keep), unless Verify already reported
// damage there.
func (c *checker) regionFinding(d datadir.LogDir, s *logScan) {
	ce, ok := s.Region.Err.(*segment.CorruptionError)
	if !ok {
		queue, part := c.names(d)
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, Queue: queue, Partition: part, PartitionID: datadir.IDString(d.ID), File: d.Rel, Detail: s.Region.Err.Error()})
		return
	}
	if len(s.Corrupt) > 0 {
		return // the damage below keep is reported; the server refuses the log for it
	}
	queue, part := c.names(d)
	f := Finding{Kind: KindMissingOffsets, Severity: SeverityDamaged, Queue: queue, Partition: part, PartitionID: datadir.IDString(d.ID),
		File: d.Rel, FirstOffset: ce.FirstOffset, LastOffset: ce.LastOffset}
	if rel, err := filepath.Rel(c.dir, ce.File); err == nil {
		f.File = rel
	}
	if ce.EndByte > 0 {
		f.StartByte, f.EndByte = ce.StartByte, ce.EndByte
	}
	if ce.Tail == record.TailCorrupt && ce.FirstOffset != 0 && ce.LastOffset >= s.Region.Keep {
		f.Kind = KindCommitLogMismatch
	}
	f.Detail = fmt.Sprintf("%s; the server keeps this log's files below offset %d (%s) and takes it out of service%s",
		ce.Reason, s.Region.Keep, c.keepSource(d.ID), c.walHolds(d.ID, ce.FirstOffset, ce.LastOffset))
	c.rep.add(f)
}

// keepSource says where a log's keep offset comes from.
func (c *checker) keepSource(id [16]byte) string {
	s, hasSum := c.rule.Sums[id]
	base, hasBase := c.wal.Logs[id].FirstBase()
	switch {
	case hasSum && hasBase && base > s.NextOffset:
		return fmt.Sprintf("the commit log's first entry for it starts at offset %d", base)
	case hasSum:
		file := summariesFile
		if c.rule.Clean {
			file = cleanFile
		}
		return fmt.Sprintf("%s says its files were synced up to offset %d", filepath.Join(dirMeta, file), s.NextOffset-1)
	case hasBase:
		return fmt.Sprintf("the commit log's first entry for it starts at offset %d", base)
	}
	return "made since the last metadata snapshot"
}

// walHolds says whether the commit log still holds offsets first..last of
// log id (a person can then get them back with comb dump --commit-log).
func (c *checker) walHolds(id [16]byte, first, last uint64) string {
	base, ok := c.wal.Logs[id].FirstBase()
	if !ok || base > last || first == 0 {
		return ""
	}
	return fmt.Sprintf("; the commit log still holds offsets %d-%d (`comb dump --commit-log --payload DATA-DIR` prints them)", max(first, base), last)
}

// compareBelow checks that every entry below the durable end is, byte for
// byte, the segment the file holds at its offsets (compared by header: the
// header's checksum covers the whole segment). Offsets retention removed or a
// repair quarantined are not compared.
func (c *checker) compareBelow(d datadir.LogDir, base Finding, s *logScan, below []datadir.WALSeg) {
	want := make(map[uint64]datadir.WALSeg, len(below))
	from := below[0].Base
	for _, seg := range below {
		if seg.Base >= s.FirstOffset {
			want[seg.Base] = seg
			from = min(from, seg.Base)
		}
	}
	if len(want) == 0 {
		return
	}
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var hdr [segment.HeaderSize]byte
	_ = datadir.ScanSegments(d.Path, from, func(si datadir.SegInfo, _ []segment.Message) bool {
		if si.FirstOffset >= s.NextOffset {
			return false
		}
		seg, ok := want[si.FirstOffset]
		if !ok {
			return true
		}
		f := files[si.File]
		if f == nil {
			var err error
			if f, err = os.Open(filepath.Join(d.Path, si.File)); err != nil {
				return true
			}
			files[si.File] = f
		}
		if _, err := f.ReadAt(hdr[:], si.Pos); err == nil {
			delete(want, si.FirstOffset)
			if hdr != seg.Header {
				c.mismatch(base, s.NextOffset, seg, fmt.Sprintf("the file's segment at offset %d (%s byte %d) is not the entry's", si.FirstOffset, si.File, si.Pos))
			}
		}
		return true
	})
	marker, _ := segment.ReadQuarantine(d.Path)
	for _, seg := range want {
		if segment.QuarantineCovers(marker, seg.Base, seg.End()-1) {
			continue
		}
		c.mismatch(base, s.NextOffset, seg, fmt.Sprintf("the file's durable region has no segment starting at offset %d", seg.Base))
	}
}

func (c *checker) mismatch(base Finding, keep uint64, seg datadir.WALSeg, what string) {
	f := base
	f.Kind, f.Severity, f.FirstOffset, f.LastOffset = KindCommitLogMismatch, SeverityDamaged, seg.Base, seg.End()-1
	f.Detail = fmt.Sprintf("the commit log's entry LSN %d (offsets %d-%d, acknowledged) is below the log's durable end (offset %d), but %s: the file holds other records than were acknowledged",
		seg.LSN, seg.Base, seg.End()-1, keep-1, what)
	c.rep.add(f)
}
