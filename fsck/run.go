package fsck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/vfs"
)

// Options configures one fsck run.
type Options struct {
	Mode Mode
	// Force runs a read-only check (ModeCheck, ModeDryRun) on a directory a live server
	// holds; the newest files may then be mid-write. Never allows ModeRepair.
	Force bool
	// Progress, when set, receives a progress bar over the bytes scanned (the command
	// passes the terminal; nil = silent).
	Progress io.Writer
}

// Run checks dataDir and, with ModeRepair, repairs what can be repaired without losing
// acknowledged data. The Report holds every finding and the exit code; the error is
// non-nil only when the check could not run (ErrLocked, ErrNotDataDir, I/O).
//
// Durability of a repair: each step is the storage package's own recovery (Open
// truncates a torn tail and fsyncs; indexes are rebuilt and synced), quarantine is a
// rename followed by an fsync of both directories, so a crash during --repair leaves
// a directory the next fsck or server start handles the same way.
func Run(dataDir string, opts Options) (*Report, error) {
	if opts.Mode == "" {
		opts.Mode = ModeCheck
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if err := datadir.Check(abs); err != nil {
		return nil, err
	}
	rep := &Report{Dir: abs, Mode: opts.Mode}
	lock, err := probeLock(abs, opts.Mode == ModeRepair)
	switch {
	case errors.Is(err, ErrLocked) && opts.Force && opts.Mode != ModeRepair:
		rep.Forced = true
	case err != nil:
		return nil, err
	}
	defer lock.release()

	c := &checker{dir: abs, opts: opts, rep: rep}
	if st, err := os.Stat(filepath.Join(abs, layout.Raft)); err == nil && st.IsDir() {
		c.replicated = true
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if opts.Mode == ModeRepair {
		c.repair()
	}
	rep.finish()
	return rep, nil
}

// checker carries one run's state between the check and repair steps.
type checker struct {
	dir  string
	opts Options
	rep  *Report
	// replicated: the directory is a node of a replicated cluster (it has
	// <data>/raft): its start replays what raft committed after its last
	// snapshot, which a single node's commit log would otherwise hold.
	replicated bool

	meta    *datadir.Meta
	wal     *datadir.WAL
	rule    *datadir.Rule
	logs    []datadir.LogDir
	scans   map[string]*logScan // by datadir.LogDir.Rel
	cursors *cursorView
	quar    []quarantineEntry
	// plans are the repair steps the findings call for, in order.
	plans []repairPlan
	// metaFindings are the findings the metadata repair fixes; rebuild says
	// it must rebuild the journal from the descriptors (check_meta.go).
	metaFindings []int
	rebuild      bool
	// clamps are the cursors past their high-water mark; clampFindings their findings.
	clamps        []cursorEntry
	clampFindings map[cursorKey]int
	// recovered is every partition's state after the server's start-up
	// would have recovered it (checkReplay): its next offset.
	recovered map[[16]byte]walLogState
	// small is the shared file of small partitions as entrylog.Check read it
	// (nil when it could not be read: checkSmall reports why).
	small    *entrylog.CheckReport
	smallErr error
}

func (c *checker) check() error {
	meta, err := datadir.ReadMeta(c.dir)
	if err != nil {
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: dirMeta, Detail: fmt.Sprintf("metadata journal: %v", err)})
	}
	c.meta = meta
	var covers uint64
	if meta != nil {
		covers = meta.Covers
	}
	if c.wal, err = datadir.ReadWAL(c.dir, covers, nil); err != nil {
		return err
	}
	c.checkCommitLog()
	if meta != nil {
		meta.ApplyCommitLog(c.wal.Meta)
	}
	c.checkMeta()
	if c.rule, err = datadir.ReadRule(c.dir, c.wal); err != nil {
		return err
	}
	if c.rule.Ignored != "" {
		c.rep.add(Finding{Kind: KindSummariesIgnored, Severity: SeverityInfo, File: c.rule.Ignored,
			Detail: fmt.Sprintf("does not decode (%v): the server ignores it and verifies every log in full at start", c.rule.IgnoredErr)})
	}

	c.quar, err = readQuarantine(c.dir)
	if err != nil {
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: dirQuarantine, Detail: err.Error()})
	}
	for _, q := range c.quar {
		c.rep.add(Finding{Kind: KindQuarantined, Severity: SeverityInfo, PartitionID: q.PartitionID, Queue: q.Queue, Partition: q.Partition,
			File: q.Moved, FirstOffset: q.FirstOffset, LastOffset: q.LastOffset,
			Detail: fmt.Sprintf("moved aside on %s: %s", q.AtRFC3339, q.Reason)})
	}

	c.small, c.smallErr = entrylog.Check(vfs.OS, filepath.Join(c.dir, dirSmall))
	c.logs, err = datadir.ListLogs(c.dir)
	if err != nil {
		return err
	}
	if err := c.checkLogs(); err != nil {
		return err
	}
	c.checkReplay()
	c.checkOrphans()
	c.checkDescriptors()
	c.planMeta()

	cur, err := readCursors(filepath.Join(c.dir, dirCursor), c.checkpoints)
	if err != nil {
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: dirCursor, Detail: fmt.Sprintf("cursor state: %v", err)})
	}
	c.cursors = cur
	c.checkCursors()
	c.checkStreams()
	c.checkNotes()
	c.checkSmall()
	c.checkMaintenance()
	c.checkAnalytics()
	return nil
}

// checkpoints passes the commit log's cursor checkpoints from LSN from on to
// fn (the cursor view replays them over the snapshot, as the server does).
func (c *checker) checkpoints(from uint64, fn func(lsn uint64, body []byte) error) error {
	return datadir.EachCheckpoint(c.dir, from, fn)
}

// names returns the queue and partition names of a log directory for reports.
func (c *checker) names(d datadir.LogDir) (queue, partition string) {
	if c.meta == nil {
		return "", ""
	}
	if d.DLQ {
		return c.meta.Queues[d.ID], "(dlq)"
	}
	p, ok := c.meta.Partitions[d.ID]
	if !ok {
		return "", ""
	}
	return p.Queue, p.Name
}
