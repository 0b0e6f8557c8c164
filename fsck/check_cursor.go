package fsck

import (
	"fmt"
	"path/filepath"
)

// checkCursors turns the cursor journal's recovery into findings and checks every
// cursor and leased span against its partition's high-water mark.
func (c *checker) checkCursors() {
	v := c.cursors
	if v == nil || !v.Present {
		return
	}
	c.rep.Totals.Cursors = len(v.Entries)
	if v.TornBytes > 0 {
		f := Finding{Kind: KindJournalTornTail, Severity: SeverityRepairable, File: filepath.Join(dirCursor, v.TornFile),
			Detail: fmt.Sprintf("cursor journal ends in %d bytes of a partial checkpoint (a crash mid-write; never acknowledged)", v.TornBytes),
			Repair: "truncate the partial checkpoint"}
		c.plan(f, repairPlan{kind: planReopenCursor})
	}
	if d := v.Corrupt; d != nil {
		c.rep.add(Finding{Kind: KindJournalCorrupt, Severity: SeverityDamaged, File: filepath.Join(dirCursor, d.File),
			StartByte: d.StartByte, EndByte: d.EndByte,
			Detail: fmt.Sprintf("cursor journal or snapshot damaged with valid data after it (%s): cursors and leases checkpointed there would be lost", d.Reason)})
	}

	byID := make(map[[16]byte]logDir, len(c.logs))
	for _, d := range c.logs {
		if !d.DLQ {
			byID[d.ID] = d
		}
	}
	var clamps []cursorEntry
	var clampFindings []int
	for _, e := range v.Entries {
		d, haveDir := byID[e.Partition]
		known := haveDir
		if c.meta != nil && c.meta.Partitions != nil {
			_, known = c.meta.Partitions[e.Partition]
		}
		if !known {
			// A cursor of a partition neither the metadata nor the disk knows: a queue
			// deleted while the server was down, or lost metadata (reported above).
			continue
		}
		var hwm uint64
		damagedLog := false
		if haveDir {
			s := c.scans[d.Rel]
			if s == nil {
				continue // unreadable log, reported
			}
			hwm = s.highWater()
			damagedLog = len(s.Corrupt) > 0
		}
		st := e.State
		past := st.Committed > hwm || st.Lease.End > hwm
		if !past {
			continue
		}
		queue, part := "", ""
		if haveDir {
			queue, part = c.names(d)
		} else if p, ok := c.meta.Partitions[e.Partition]; ok {
			queue, part = p.Queue, p.Name
		}
		f := Finding{Kind: KindCursorPastEnd, Severity: SeverityRepairable, Queue: queue, Partition: part,
			PartitionID: idString(e.Partition), Group: e.Group, FirstOffset: hwm + 1, LastOffset: max(st.Committed, st.Lease.End),
			Detail: fmt.Sprintf("cursor %d (leased span end %d) is past the partition's high-water mark %d: the data it refers to is not on disk", st.Committed, st.Lease.End, hwm),
			Repair: fmt.Sprintf("clamp the cursor to %d and drop the lease; the group resumes at offset %d", min(st.Committed, hwm), min(st.Committed, hwm)+1)}
		if damagedLog {
			f.Severity = SeverityDamaged
			f.Repair = ""
			f.Detail += " (the log is damaged: fix that first)"
			c.rep.add(f)
			continue
		}
		clampFindings = append(clampFindings, len(c.rep.Findings))
		c.rep.add(f)
		clamps = append(clamps, cursorEntry{Partition: e.Partition, Group: e.Group, State: clampState(st, hwm)})
	}
	if len(clamps) > 0 {
		c.plans = append(c.plans, repairPlan{kind: planClampCursors, clamps: clamps, findings: clampFindings})
	}
}
