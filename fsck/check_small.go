package fsck

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/vfs"
)

// dirSmall is the shared file of small partitions' records (package entrylog).
const dirSmall = layout.Small

// checkSmall reads every file of <data>/small with entrylog.Check, the
// decoder and tail rule the server's entrylog.Open applies at start-up
// (docs/format.md section 12): what Open refuses is damage (exit 2), what it
// cuts is repairable (exit 1; --repair cuts it with entrylog.Open itself,
// keeping the bytes in quarantine/small/ as the server does).
func (c *checker) checkSmall() {
	dir := filepath.Join(c.dir, dirSmall)
	rep, err := entrylog.Check(vfs.OS, dir)
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
