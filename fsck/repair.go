package fsck

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/combmq/comb/lease"
)

type planKind uint8

const (
	planTruncateMeta planKind = iota + 1
	planQuarantine
	planReopenLog
	planReopenCursor
	planClampCursors
)

// repairPlan is one repair step; findings are the indexes (in Report.Findings) of
// the findings it fixes.
type repairPlan struct {
	kind     planKind
	findings []int
	size     int64         // planTruncateMeta
	log      logDir        // planQuarantine, planReopenLog
	dmg      damage        // planQuarantine
	clamps   []cursorEntry // planClampCursors
}

// plan records a finding together with the step that repairs it.
func (c *checker) plan(f Finding, p repairPlan) {
	p.findings = append(p.findings, len(c.rep.Findings))
	c.rep.add(f)
	c.plans = append(c.plans, p)
}

// repair runs the plans in the order they were made: metadata first, then each log
// (quarantine before the reopen that rebuilds its indexes), then the cursor journal
// (truncate, then clamp against the repaired high-water marks).
func (c *checker) repair() {
	for _, p := range c.plans {
		err := c.apply(p)
		for _, i := range p.findings {
			f := &c.rep.Findings[i]
			if err != nil {
				f.RepairError = err.Error()
				continue
			}
			f.Repaired = true
		}
	}
}

func (c *checker) apply(p repairPlan) error {
	switch p.kind {
	case planTruncateMeta:
		return truncateFile(filepath.Join(c.dir, c.meta.File), p.size)
	case planQuarantine:
		s := c.scans[p.log.Rel]
		var file fileSummary
		for _, f := range s.Files {
			if f.Name == p.dmg.File {
				file = f
			}
		}
		if file.FirstOffset == 0 && file.LastOffset == 0 {
			file.FirstOffset, file.LastOffset = p.dmg.FirstOffset, p.dmg.LastOffset
		}
		queue, part := c.names(p.log)
		e, err := quarantineFile(c.dir, p.log, p.dmg, file, queue, part, time.Now())
		if err != nil {
			return err
		}
		c.quar = append(c.quar, e)
		// Damage stays reported (exit 2): the offsets are gone from the log until a
		// person restores them from the quarantined file or a copy.
		return nil
	case planReopenLog:
		return reopenLog(p.log.Path)
	case planReopenCursor:
		return reopenCursors(filepath.Join(c.dir, dirCursor), nil)
	case planClampCursors:
		return reopenCursors(filepath.Join(c.dir, dirCursor), p.clamps)
	}
	return fmt.Errorf("unknown repair step %d", p.kind)
}

// clampState moves a cursor back to the high-water mark and forgets a lease whose
// span reaches past it: the next pop of the group resumes at hwm+1.
func clampState(s lease.State, hwm uint64) lease.State {
	if s.Committed > hwm {
		s.Committed = hwm
	}
	if s.Lease.End > hwm || s.Lease.Start > hwm+1 {
		s.Lease = lease.Lease{}
		s.Retries = 0
	}
	return s
}

// truncateFile cuts path to size and fsyncs it.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("truncate %s at %d: %w", path, size, err)
	}
	return f.Sync()
}
