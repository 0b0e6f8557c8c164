package fsck

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/datadir"
)

type cursorKey struct {
	Partition [16]byte
	Group     string
}

// checkCursors turns the cursor engine's recovery into findings and checks every
// cursor and leased span against its partition's high-water mark after the
// server's recovery: the cursors are the snapshot's with the commit log's later
// checkpoints applied, and a partition's high-water mark counts the records
// only the commit log holds (a cursor may already point into them).
func (c *checker) checkCursors() {
	v := c.cursors
	if v == nil || !v.Present {
		return
	}
	c.rep.Totals.Cursors = len(v.Entries)
	if v.CheckpointErr != nil {
		c.rep.add(Finding{Kind: KindCommitLogCorrupt, Severity: SeverityDamaged, File: dirCommitLog,
			Detail: fmt.Sprintf("a cursor checkpoint in the commit log does not decode (%v): the server refuses to start; the cursors are judged as of the checkpoints before it", v.CheckpointErr)})
	}
	if d := v.Corrupt; d != nil {
		c.rep.add(Finding{Kind: KindJournalCorrupt, Severity: SeverityDamaged, File: filepath.Join(dirCursor, d.File),
			StartByte: d.StartByte, EndByte: d.EndByte,
			Detail: fmt.Sprintf("cursor snapshot (or a format 1 or 2 journal) damaged (%s): cursors and leases stored there would be lost", d.Reason)})
		return
	}
	c.clampFindings = map[cursorKey]int{}
	c.clamps = c.pastEnd()
}

// pastEnd finds every cursor or leased span past its partition's high-water mark
// (as c.scans say now), reports each once, and returns the clamped states.
func (c *checker) pastEnd() []cursorEntry {
	byID := make(map[[16]byte]datadir.LogDir, len(c.logs))
	for _, d := range c.logs {
		if !d.DLQ {
			byID[d.ID] = d
		}
	}
	var clamps []cursorEntry
	for _, e := range c.cursors.Entries {
		d, haveDir := byID[e.Partition]
		known := haveDir
		if !known && c.meta != nil && c.meta.Present {
			_, known = c.meta.Partitions[e.Partition]
		}
		if !known {
			// Neither the metadata nor the disk knows the partition: a queue deleted
			// while its cursors were still journaled. Nothing to compare with.
			continue
		}
		var hwm uint64
		damagedLog := false
		queue, part := "", ""
		rec, replayed := c.recovered[e.Partition]
		if replayed {
			hwm, damagedLog = rec.next-1, rec.damaged
		}
		if haveDir {
			s := c.scans[d.Rel]
			if s == nil {
				continue // unreadable log, reported
			}
			if !replayed {
				hwm = s.highWater()
			}
			damagedLog = damagedLog || len(s.Corrupt) > 0
			queue, part = c.names(d)
		} else if p, ok := c.meta.Partitions[e.Partition]; ok {
			queue, part = p.Queue, p.Name
		}
		st := e.State
		if st.Committed <= hwm && st.Lease.End <= hwm {
			continue
		}
		k := cursorKey{e.Partition, e.Group}
		if _, seen := c.clampFindings[k]; !seen {
			f := Finding{Kind: KindCursorPastEnd, Severity: SeverityRepairable, Queue: queue, Partition: part,
				PartitionID: datadir.IDString(e.Partition), Group: e.Group, FirstOffset: hwm + 1, LastOffset: max(st.Committed, st.Lease.End),
				Detail: fmt.Sprintf("cursor %d (leased span end %d) is past the partition's high-water mark %d: the data it refers to is not on disk", st.Committed, st.Lease.End, hwm),
				Repair: fmt.Sprintf("clamp the cursor to %d and drop the lease; the group resumes at offset %d", min(st.Committed, hwm), min(st.Committed, hwm)+1)}
			if damagedLog && c.opts.Mode != ModeRepair {
				f.Detail += " (the log is damaged: its quarantine runs first)"
			}
			c.clampFindings[k] = len(c.rep.Findings)
			c.rep.add(f)
		}
		clamps = append(clamps, cursorEntry{Partition: e.Partition, Group: e.Group, State: clampState(st, hwm)})
	}
	return clamps
}
