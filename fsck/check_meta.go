package fsck

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/record"
)

// checkMeta turns the metadata journal's state into findings. The repair
// step is chosen later by planMeta, once the log directories are known.
func (c *checker) checkMeta() {
	m := c.meta
	if m == nil || !m.Present {
		return
	}
	c.rep.Totals.Queues = len(m.Queues)
	if m.Legacy {
		c.rep.add(Finding{Kind: KindJournalLegacy, Severity: SeverityInfo, File: m.File,
			Detail: "version 1 metadata journal: the server rewrites it in the current format at its next start (keeping the old file as meta/journal.v1)"})
	}
	f := Finding{File: m.File, StartByte: m.ValidBytes, EndByte: m.Bytes, Severity: SeverityRepairable}
	switch m.Tail {
	case record.TailTorn:
		f.Kind = KindJournalTornTail
		f.Detail = fmt.Sprintf("metadata journal ends in %d bytes of an incomplete record (a crash mid-write; never acknowledged)", m.Bytes-m.ValidBytes)
		f.Repair = fmt.Sprintf("copy the bytes to %s/meta/ and cut %s at byte %d", dirQuarantine, m.File, m.ValidBytes)
	case record.TailDamaged:
		f.Kind = KindJournalDamagedTail
		f.Detail = "the metadata journal's last record is whole but fails its checksum: a torn write, or damage to an acknowledged queue or partition change"
		f.Repair = fmt.Sprintf("copy the bytes to %s/meta/ and cut %s at byte %d; partitions it named are rebuilt from their directories", dirQuarantine, m.File, m.ValidBytes)
	case record.TailCorrupt:
		// Damage the server refuses to start with (issue 21): exit 2 even
		// though a rebuild is offered, since a configure or delete in the
		// damaged bytes is lost by it.
		f.Kind, f.Severity = KindJournalCorrupt, SeverityDamaged
		f.Detail = fmt.Sprintf("metadata journal damaged from byte %d with valid records after it (%d of them still read): %v; the server refuses to start", m.ValidBytes, len(m.Salvaged), m.Err)
		f.Repair = "rebuild meta/journal from its valid records, the records after the damage and the directories' descriptors (the old file is kept in quarantine/meta/); a configure or delete in the damaged bytes is lost"
	default:
		return
	}
	c.metaFindings = append(c.metaFindings, len(c.rep.Findings))
	c.rep.add(f)
}

// checkOrphans compares the partition and DLQ directories with the metadata
// (the journal's snapshot and the commit log's metadata entries after it):
// a directory neither names is rebuilt into it from its
// descriptor (repairable), is harmless without records (info), and needs a
// person when it holds records and no descriptor says what it is.
func (c *checker) checkOrphans() {
	m := c.meta
	if m == nil {
		return
	}
	var unnamed []datadir.LogDir
	for _, d := range c.logs {
		known := false
		if d.DLQ {
			_, known = m.Queues[d.ID]
		} else {
			_, known = m.Partitions[d.ID]
		}
		if !known {
			unnamed = append(unnamed, d)
		}
	}
	// Without a journal, the commit log's metadata entries may still name
	// every directory (a server killed before its first flush pass wrote a
	// snapshot): the server rebuilds the registry from them.
	if !m.Present && len(unnamed) > 0 {
		f := Finding{Kind: KindJournalMissing, Severity: SeverityRepairable, File: filepath.Join(dirMeta, metaJournalFile),
			Detail: fmt.Sprintf("the metadata journal is missing and %d log directories exist that the commit log does not name either", len(unnamed)),
			Repair: "rebuild meta/journal from the directories' descriptors (queue options fall back to the defaults)"}
		c.metaFindings = append(c.metaFindings, len(c.rep.Findings))
		c.rep.add(f)
		c.rebuild = true
	}
	for _, d := range unnamed {
		var records int64
		if s := c.scans[d.Rel]; s != nil {
			records = s.Records
		}
		f := Finding{Kind: KindOrphanPartition, PartitionID: datadir.IDString(d.ID), File: d.Rel}
		desc, derr := meta.ReadDescriptor(nil, d.Path)
		if derr == nil {
			derr = desc.CheckDir(d.DLQ, d.ID)
		}
		switch {
		case m.Deleted[d.ID]:
			f.Severity = SeverityInfo
			f.Detail = "data of a deleted queue (a crash during the delete); the server removes it at its next start"
		case c.replicated && !d.DLQ:
			f.Severity = SeverityInfo
			f.Detail = fmt.Sprintf("partition directory with %d records created after this replicated node's last metadata snapshot; "+
				"the server removes it at its next start and raft creates it again from its log (docs/replication.md, \"A deposed leader\")", records)
		case derr == nil:
			f.Severity, f.Queue, f.Partition = SeverityRepairable, desc.Queue, desc.Partition
			f.Detail = fmt.Sprintf("log directory with %d records that the metadata journal does not name; its DESCRIPTOR says queue %q", records, desc.Queue)
			f.Repair = "add it (and its queue, if missing) to meta/journal"
			c.metaFindings = append(c.metaFindings, len(c.rep.Findings))
			c.rebuild = true
		case records == 0:
			f.Severity = SeverityInfo
			f.Detail = "log directory without records that the metadata does not name (left by a crash while a partition was being created); the server removes it at its next start"
		default:
			f.Severity = SeverityDamaged
			f.Detail = fmt.Sprintf("log directory with %d records that the metadata does not name and no readable DESCRIPTOR (%v): nothing says which queue it belongs to. "+
				"%s reads its records; restore meta/journal from a copy, or move the directory aside", records, derr, orphanDumpHint(d.DLQ, datadir.IDString(d.ID)))
		}
		c.rep.add(f)
	}
}

// planMeta chooses the metadata repair: a rebuild when a directory with
// records needs naming or the journal is damaged mid-file, else cutting a
// torn or damaged tail (meta.OpenJournal's own recovery).
func (c *checker) planMeta() {
	m := c.meta
	if m == nil || len(c.metaFindings) == 0 {
		return
	}
	kind := planOpenMeta
	if c.rebuild || m.Tail == record.TailCorrupt {
		kind = planRebuildMeta
	}
	c.plans = append(c.plans, repairPlan{kind: kind, findings: c.metaFindings})
}

// orphanDumpHint is the comb dump command line that prints an orphan log's records with their
// payloads (docs/operations.md, "comb dump"). DATA-DIR stays a placeholder: findings name files
// relative to the data directory.
func orphanDumpHint(dlq bool, id string) string {
	if dlq {
		return "`comb dump --dlq --payload DATA-DIR | jq -c 'select(.partitionId==\"" + id + "\")'`"
	}
	return "`comb dump --partition-id " + id + " --payload DATA-DIR`"
}
