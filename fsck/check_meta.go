package fsck

import "fmt"

// checkMeta turns the metadata journal's state into findings.
func (c *checker) checkMeta() {
	m := c.meta
	if m == nil || !m.Present {
		return
	}
	c.rep.Totals.Queues = len(m.Queues)
	if m.Bytes <= m.ValidBytes {
		return
	}
	f := Finding{File: m.File, StartByte: m.ValidBytes, EndByte: m.Bytes}
	if m.MidFile {
		f.Kind, f.Severity = KindJournalCorrupt, SeverityDamaged
		f.Detail = fmt.Sprintf("metadata journal damaged at byte %d with valid records after it: queues or partitions registered after this point would be forgotten", m.ValidBytes)
		c.rep.add(f)
		return
	}
	f.Kind, f.Severity = KindJournalTornTail, SeverityRepairable
	f.Detail = fmt.Sprintf("metadata journal ends in %d bytes of a partial record (a crash mid-write; never acknowledged)", m.Bytes-m.ValidBytes)
	f.Repair = fmt.Sprintf("truncate %s to %d bytes", m.File, m.ValidBytes)
	c.plan(f, repairPlan{kind: planTruncateMeta, size: m.ValidBytes})
}

// checkOrphans compares the partition and DLQ directories with the metadata.
func (c *checker) checkOrphans() {
	m := c.meta
	if m == nil {
		return
	}
	if !m.Present {
		var withRecords int
		for _, d := range c.logs {
			if s := c.scans[d.Rel]; s != nil && s.Records > 0 {
				withRecords++
			}
		}
		if withRecords > 0 {
			c.rep.add(Finding{Kind: KindOrphanPartition, Severity: SeverityDamaged, File: dirMeta,
				Detail: fmt.Sprintf("the metadata journal is missing but %d log directories hold records: the broker cannot name them; restore meta/journal from a copy", withRecords)})
		}
		return
	}
	for _, d := range c.logs {
		known := false
		if d.DLQ {
			_, known = m.Queues[d.ID]
		} else {
			_, known = m.Partitions[d.ID]
		}
		if known {
			continue
		}
		s := c.scans[d.Rel]
		var records int64
		if s != nil {
			records = s.Records
		}
		f := Finding{Kind: KindOrphanPartition, PartitionID: idString(d.ID), File: d.Rel}
		if records == 0 {
			f.Severity = SeverityInfo
			f.Detail = "log directory without records that the metadata does not name (left by a crash while a partition was being created, or by a queue delete); harmless"
		} else {
			f.Severity = SeverityDamaged
			f.Detail = fmt.Sprintf("log directory with %d records that the metadata does not name: the broker cannot reach them (lost metadata?); %s reads them", records, orphanDumpHint(d.DLQ, idString(d.ID)))
		}
		c.rep.add(f)
	}
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
