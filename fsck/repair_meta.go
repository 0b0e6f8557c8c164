package fsck

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

// cutMetaTail runs the journal's own recovery (meta.OpenJournal): a torn or
// damaged tail is copied to <data>/quarantine/meta/ and cut, with fsyncs.
func (c *checker) cutMetaTail() error {
	j, _, err := meta.OpenJournal(filepath.Join(c.dir, dirMeta), meta.Options{QuarantineDir: filepath.Join(c.dir, dirQuarantine, dirMeta)})
	if err != nil {
		return err
	}
	return j.Close()
}

// rebuildMeta writes a journal that names every directory with a descriptor
// (meta.Rebuild): the old journal's valid records, the records still read
// after damage, then what only descriptors know. The old file is copied to
// <data>/quarantine/meta/ first; the new one replaces it atomically, so a
// crash leaves the old journal or the new one. What could not be recovered
// (options of rebuilt queues, undescribed directories, name conflicts) is
// added to the report.
func (c *checker) rebuildMeta() error {
	m := c.meta
	survived := append(append([]meta.Record(nil), m.Records...), m.Salvaged...)
	recs, rr, err := meta.Rebuild(nil, c.dir, survived)
	if err != nil {
		return err
	}
	metaDir := filepath.Join(c.dir, dirMeta)
	old := filepath.Join(metaDir, metaJournalFile)
	if data, err := os.ReadFile(old); err == nil && len(data) > 0 {
		qdir := filepath.Join(c.dir, dirQuarantine, dirMeta)
		if err := os.MkdirAll(qdir, 0o755); err != nil {
			return err
		}
		kept := filepath.Join(qdir, fmt.Sprintf("journal-%d.replaced", time.Now().UnixMicro()))
		if err := vfs.WriteFileAtomic(vfs.OS, kept, data, false); err != nil {
			return fmt.Errorf("keep the old journal: %w", err)
		}
	}
	if err := meta.WriteJournal(nil, metaDir, recs, false); err != nil {
		return err
	}
	for _, q := range rr.Queues {
		c.rep.add(Finding{Kind: KindJournalMissing, Severity: SeverityInfo, Queue: q, File: filepath.Join(dirMeta, metaJournalFile),
			Detail: "queue rebuilt from its directories' descriptors: its options are the defaults (configure it again if it had others)"})
	}
	for _, p := range rr.Partitions {
		c.rep.add(Finding{Kind: KindOrphanPartition, Severity: SeverityInfo, File: filepath.Join(dirMeta, metaJournalFile),
			Detail: "partition " + p + " added to the metadata journal from its descriptor"})
	}
	for _, x := range rr.Conflicts {
		c.rep.add(Finding{Kind: KindOrphanPartition, Severity: SeverityDamaged, Detail: "not rebuilt: " + x})
	}
	return nil
}
