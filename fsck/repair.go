package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/segment"
)

type planKind uint8

const (
	planOpenMeta planKind = iota + 1
	planRebuildMeta
	planQuarantine
	planQuarantineTail
	planReopenLog
	planMarkQuarantined
	planFinishSplits
	planCommitLogTail
)

// repairPlan is one repair step; findings are the indexes (in Report.Findings) of
// the findings it fixes.
type repairPlan struct {
	kind     planKind
	findings []int
	log      datadir.LogDir // planQuarantine, planQuarantineTail, planReopenLog, planMarkQuarantined
	dmg      damage         // planQuarantine, planQuarantineTail, planMarkQuarantined
	// region: planReopenLog of a log written behind the commit log, reopened
	// below its keep offset as the server does (segment.OpenFrom).
	region *durableRegion
	// run, when set, is the whole step: a file whose own package repairs it
	// as the server's start-up does (notes.Open).
	run func() error
}

// plan records a finding together with the step that repairs it.
func (c *checker) plan(f Finding, p repairPlan) {
	p.findings = append(p.findings, len(c.rep.Findings))
	c.rep.add(f)
	c.plans = append(c.plans, p)
}

// repair runs the plans in the order they were made (metadata, then each log with
// its quarantine before the reopen that rebuilds its indexes), then re-scans the
// repaired logs and clamps every cursor against the high-water marks as they are
// now: a quarantined tail can lower a high-water mark below cursors that were fine
// before the repair.
func (c *checker) repair() {
	touched := map[string]bool{}
	for _, p := range c.plans {
		err := c.apply(p)
		c.mark(p.findings, err)
		if p.kind == planReopenLog && err == nil {
			touched[p.log.Rel] = true
		}
	}
	for _, d := range c.logs {
		if !touched[d.Rel] {
			continue
		}
		if s, err := scanLog(d.Path, nil); err == nil {
			c.scans[d.Rel] = s
		}
	}
	c.repairCursors()
}

func (c *checker) mark(findings []int, err error) {
	for _, i := range findings {
		f := &c.rep.Findings[i]
		if err != nil {
			f.RepairError = err.Error()
			continue
		}
		// Damage stays damage after a quarantine (exit 2): the offsets are out of the
		// log until a person restores them; the finding says where they went.
		f.Repaired = f.Severity != SeverityDamaged
		if f.Severity == SeverityDamaged {
			f.Detail += "; quarantined"
		}
	}
}

// repairCursors clamps the cursors past their high-water marks as they are after
// the log repairs, written as a new cursor snapshot in one open of the engine.
func (c *checker) repairCursors() {
	v := c.cursors
	if v == nil || !v.Present || v.Corrupt != nil {
		return
	}
	c.clamps = c.pastEnd()
	var fixes []int
	for _, i := range c.clampFindings {
		fixes = append(fixes, i)
	}
	if len(fixes) == 0 {
		return
	}
	var next uint64
	if c.wal != nil && c.wal.Last != 0 {
		next = c.wal.Last + 1
	}
	c.mark(fixes, reopenCursors(filepath.Join(c.dir, dirCursor), c.checkpoints, next, c.clamps))
}

func (c *checker) apply(p repairPlan) error {
	if p.run != nil {
		return p.run()
	}
	switch p.kind {
	case planOpenMeta:
		return c.cutMetaTail()
	case planRebuildMeta:
		return c.rebuildMeta()
	case planQuarantine, planQuarantineTail:
		var file fileSummary
		for _, f := range c.scans[p.log.Rel].Files {
			if f.Name == p.dmg.File {
				file = f
			}
		}
		queue, part := c.names(p.log)
		if p.kind == planQuarantine {
			es, err := splitFile(c.dir, p.log, p.dmg.File, queue, part, time.Now())
			if errors.Is(err, errCannotSplit) {
				var e quarantineEntry
				// The good segments cannot be told apart: the whole file goes.
				if e, err = quarantineFile(c.dir, p.log, p.dmg, file, queue, part, time.Now()); err == nil {
					es = append(es, e)
				}
			}
			c.quar = append(c.quar, es...)
			return err
		}
		e, err := quarantineTail(c.dir, p.log, p.dmg, file.LastOffset, queue, part, time.Now())
		if err == nil {
			c.quar = append(c.quar, e)
		}
		return err
	case planFinishSplits:
		_, err := segment.FinishSplits(p.log.Path)
		return err
	case planCommitLogTail:
		return repairCommitLog(c.dir)
	case planReopenLog:
		keep := uint64(0)
		if p.region != nil {
			keep = p.region.Keep
		}
		rep, err := reopenLog(p.log.Path, filepath.Join(c.dir, dirQuarantine, filepath.Dir(p.log.Rel)), keep)
		if err == nil && rep.KeptAt != "" {
			err = c.listKeptTail(p, rep)
		}
		return err
	case planMarkQuarantined:
		return segment.AddQuarantined(p.log.Path, segment.OffsetRange{First: p.dmg.FirstOffset, Last: p.dmg.LastOffset},
			"listed in "+filepath.Join(dirQuarantine, manifestName))
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

// listKeptTail adds the bytes segment.Open kept when it cut a torn tail to the
// quarantine manifest (so later checks list them as quarantined) and says where they
// went in the torn-tail finding.
func (c *checker) listKeptTail(p repairPlan, rep *segment.RecoveryReport) error {
	moved, _ := filepath.Rel(c.dir, rep.KeptAt)
	original, _ := filepath.Rel(c.dir, rep.File)
	queue, part := c.names(p.log)
	e := quarantineEntry{
		AtRFC3339: time.Now().UTC().Format(time.RFC3339), PartitionID: datadir.IDString(p.log.ID), Queue: queue, Partition: part,
		Original: original, Moved: moved, StartByte: rep.TruncatedAt, EndByte: rep.TruncatedAt + rep.TruncatedBytes,
		FirstOffset: rep.LostFirstOffset, LastOffset: rep.LostLastOffset,
		Reason: "torn tail cut by fsck --repair: " + rep.TailText(),
	}
	if err := appendManifest(c.dir, e); err != nil {
		return err
	}
	c.quar = append(c.quar, e)
	for _, i := range p.findings {
		if f := &c.rep.Findings[i]; f.Kind == KindTornTail {
			f.Repair = fmt.Sprintf("truncate %s at byte %d; the bytes cut were kept at %s", f.File, rep.TruncatedAt, moved)
		}
	}
	return nil
}
