package fsck

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
)

// dirSmall is the shared file of small partitions' records (package entrylog).
const dirSmall = layout.Small

// checkSmall reads every file of <data>/small with entrylog.Check, the
// decoder and tail rule the server's entrylog.Open applies at start-up
// (docs/format.md section 12): what Open refuses is damage (exit 2), what it
// cuts is repairable (exit 1; --repair cuts it with entrylog.Open itself,
// keeping the bytes in quarantine/small/ as the server does).
func (c *checker) checkSmall() {
	rep, err := c.small, c.smallErr
	if err != nil {
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: dirSmall, Detail: err.Error()})
		return
	}
	var cut []int
	for _, f := range rep.Files {
		rel, _ := filepath.Rel(c.dir, f.Name)
		switch {
		case f.Damage != nil:
			c.rep.add(Finding{Kind: KindSmallCorrupt, Severity: SeverityDamaged, File: rel, StartByte: f.Damage.StartByte, EndByte: f.Damage.EndByte,
				Detail: f.Damage.Reason + " (the server refuses to start with it: small partitions' synced records are in it)"})
			continue
		case f.Cut && f.End == 0:
			cut = append(cut, len(c.rep.Findings))
			c.rep.add(Finding{Kind: KindSmallTornTail, Severity: SeverityRepairable, File: rel, EndByte: f.Size,
				Detail: fmt.Sprintf("the newest file, %d bytes without a whole header: a creation a crash cut short (nothing in it was synced)", f.Size),
				Repair: "remove it after keeping its non-zero bytes in quarantine/small/, as the server does at start",
			})
		case f.Cut:
			cut = append(cut, len(c.rep.Findings))
			c.rep.add(Finding{Kind: KindSmallTornTail, Severity: SeverityRepairable, File: rel, StartByte: f.End, EndByte: f.Size,
				Detail: fmt.Sprintf("%s tail after %d whole frames, past the synced length %d (written unsynced; the commit log still holds it)", f.Tail, f.Frames, f.Synced),
				Repair: fmt.Sprintf("copy its non-zero bytes to quarantine/small/ and cut it at byte %d, as the server does at start", f.End),
			})
		}
		if !f.SlotOK && f.Damage == nil && f.End > 0 {
			c.rep.add(Finding{Kind: KindSmallSlot, Severity: SeverityInfo, File: rel, StartByte: 32, EndByte: 48,
				Detail: "the synced slot fails its check: the server reads it as nothing synced and rewrites it at its next sync"})
		}
	}
	if len(cut) > 0 {
		c.plans = append(c.plans, repairPlan{findings: cut, run: c.repairSmall})
	}
}

// repairSmall opens the shared file as the server's start-up does, which
// cuts torn tails after copying them to quarantine/small/.
func (c *checker) repairSmall() error {
	l, _, err := entrylog.Open(filepath.Join(c.dir, dirSmall),
		entrylog.Options{QuarantineDir: filepath.Join(c.dir, dirQuarantine, dirSmall)})
	if err != nil {
		return err
	}
	return l.Close()
}

// replaySmall is replayLog for a small partition (no directory; its records
// in the shared file): the server attaches its homed segments, which must
// run contiguously and hold every offset below keep, then appends the commit
// log's segments from their end on.
func (c *checker) replaySmall(id [16]byte, keep uint64, l *datadir.WALLog) walLogState {
	exts := c.small.Segments[id]
	pid := datadir.IDString(id)
	queue, part := "", ""
	if c.meta != nil {
		if p, ok := c.meta.Partitions[id]; ok {
			part = p.Name
			queue = c.meta.Queues[p.QueueID]
		}
	}
	base := Finding{Queue: queue, Partition: part, PartitionID: pid, File: dirSmall}
	st := walLogState{keep: keep, next: exts[0].Base}
	for _, e := range exts {
		if e.Base != st.next {
			f := base
			f.Kind, f.Severity, f.FirstOffset, f.LastOffset = KindMissingOffsets, SeverityDamaged, min(st.next, e.Base), max(st.next, e.Base)-1
			f.Detail = fmt.Sprintf("the shared file holds this small partition's segments up to offset %d, then from %d: the server takes it out of service", st.next-1, e.Base)
			c.rep.add(f)
			st.damaged = true
			return st
		}
		st.next = e.Next()
	}
	if st.next < keep {
		f := base
		f.Kind, f.Severity, f.FirstOffset, f.LastOffset = KindMissingOffsets, SeverityDamaged, st.next, keep-1
		f.Detail = fmt.Sprintf("the shared file holds this small partition's records up to offset %d, but offsets below %d were synced (%s)", st.next-1, keep, c.keepSource(id))
		c.rep.add(f)
		st.damaged = true
		return st
	}
	if l == nil {
		return st
	}
	for _, seg := range l.Segments() {
		switch {
		case seg.End() <= st.next:
		case seg.Base == st.next:
			st.next, st.replayed = seg.End(), st.replayed+int64(seg.Count)
		default:
			f := base
			f.Kind, f.Severity, f.FirstOffset, f.LastOffset = KindMissingOffsets, SeverityDamaged, st.next, seg.Base-1
			f.Detail = fmt.Sprintf("the small partition ends at offset %d but the commit log continues at %d (entry LSN %d)", st.next-1, seg.Base, seg.LSN)
			c.rep.add(f)
			st.damaged = true
			return st
		}
	}
	c.rep.Totals.CommitLog.OnlyInCommitLog += st.replayed
	return st
}
