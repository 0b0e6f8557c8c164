package fsck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
)

// largeDirBytes: below this many bytes of segment files no progress bar is drawn
// (a bar that flashes for a second is noise).
const largeDirBytes = 256 << 20

// checkLogs scans every partition and DLQ log read-only.
func (c *checker) checkLogs() error {
	c.scans = make(map[string]*logScan, len(c.logs))
	bar := c.progressBar()
	for _, d := range c.logs {
		if d.DLQ {
			c.rep.Totals.DLQLogs++
		} else {
			c.rep.Totals.Partitions++
		}
		s, err := scanLogBelow(d.Path, c.region(d), func(bytes int64) {
			if bar != nil {
				_ = bar.Add64(bytes)
			}
		})
		queue, part := c.names(d)
		base := Finding{Queue: queue, Partition: part, PartitionID: datadir.IDString(d.ID)}
		if err != nil {
			f := base
			f.Kind, f.Severity, f.File = KindUnreadable, SeverityDamaged, d.Rel
			f.Detail = err.Error()
			c.rep.add(f)
			continue
		}
		c.scans[d.Rel] = s
		c.logFindings(d, base, s)
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return nil
}

// region is the durable region the server keeps of d's log (datadir.Rule),
// nil when it verifies the whole log (segment.Open).
func (c *checker) region(d datadir.LogDir) *durableRegion {
	keep, ok := c.rule.KeepBelow(d.ID, d.DLQ)
	if !ok {
		return nil
	}
	r := &durableRegion{Keep: keep}
	r.Cut, r.Err = segment.PlanFrom(d.Path, keep)
	return r
}

func (c *checker) logFindings(d datadir.LogDir, base Finding, s *logScan) {
	t := &c.rep.Totals
	t.Files += s.ScannedFiles
	t.Bytes += s.ScannedBytes
	t.Segments += s.Segments
	t.Records += s.Records
	var fixedByOpen []int // findings a segment.Open of this log repairs
	add := func(f Finding) {
		fixedByOpen = append(fixedByOpen, len(c.rep.Findings))
		c.rep.add(f)
	}
	if len(s.PendingSplits) > 0 || len(s.SplitCopies) > 0 {
		// First: the log's other repairs start from a finished (or undone) split.
		f := base
		f.Kind, f.Severity, f.File = KindSplitPending, SeverityRepairable, d.Rel
		f.Detail = fmt.Sprintf("an interrupted repair left %d pending %s line(s) %v and %d copy(ies) of good segments beside the log %v: the partition serves, but with a wider gap than the damage needs",
			len(s.PendingSplits), segment.QuarantineFileName, s.PendingSplits, len(s.SplitCopies), s.SplitCopies)
		f.Repair = "finish the split: move the copies into the log (or drop them if the damaged original is still there) and narrow " + segment.QuarantineFileName + " to the damaged offsets"
		c.plan(f, repairPlan{kind: planFinishSplits, log: d})
	}
	if s.Torn != nil {
		f := base
		f.Kind, f.Severity = KindTornTail, SeverityRepairable
		f.File = filepath.Join(d.Rel, s.Torn.File)
		f.StartByte, f.EndByte = s.Torn.StartByte, s.Torn.EndByte
		f.FirstOffset, f.LastOffset = s.Torn.FirstOffset, s.Torn.LastOffset
		if f.LastOffset == f.FirstOffset {
			// segment reports (next, next) when no header after the cut parses: the
			// first offset that would have been written is known, how many is not.
			f.LastOffset = 0
		}
		f.Detail = fmt.Sprintf("newest file ends in %d bytes that are not a whole segment (%s): %s",
			s.Torn.EndByte-s.Torn.StartByte, s.Torn.Reason, segment.TailText(s.Torn.Tail, ""))
		f.Repair = fmt.Sprintf("truncate %s at byte %d", f.File, s.Torn.StartByte)
		if s.Torn.Tail != record.TailZeros {
			f.Repair += fmt.Sprintf(", keeping the bytes cut in %s", filepath.Join(dirQuarantine, d.Rel, fmt.Sprintf("%s.from-%d", s.Torn.File, s.Torn.StartByte)))
		}
		add(f)
	}
	quarantined := c.quarantinedRanges(d.ID)
	newest := ""
	if n := len(s.Files); n > 0 {
		newest = s.Files[n-1].Name
	}
	planned := map[string]bool{}
	for _, dm := range s.Corrupt {
		f := base
		f.File = filepath.Join(d.Rel, dm.File)
		f.StartByte, f.EndByte = dm.StartByte, dm.EndByte
		f.FirstOffset, f.LastOffset = dm.FirstOffset, dm.LastOffset
		if dm.Gap {
			c.gapFinding(d, f, dm, quarantined)
			continue
		}
		f.Kind, f.Severity = KindCorruptSegment, SeverityDamaged
		f.Detail = fmt.Sprintf("damaged segment data (%s); offsets %s are lost unless recovered from a copy", dm.Reason, offsetsText(dm.FirstOffset, dm.LastOffset))
		switch {
		case planned[dm.File]:
			f.Repair = "covered by the quarantine of " + f.File + " above"
			c.rep.add(f)
		case dm.File == newest && s.Region != nil && dm.Tail == record.TailTorn && dm.EndByte == newestBytes(s):
			// The file ends inside a segment below its synced length: cut, not
			// torn (package recovery).
			f.Kind = KindShortFile
			if dm.LastOffset != 0 && s.Region.Keep > dm.LastOffset+1 {
				// The whole segments that followed the cut one went with the cut:
				// every synced offset from the cut segment on is lost, as the
				// server reports it (package recovery), not just the cut segment's.
				f.LastOffset = s.Region.Keep - 1
			}
			f.Detail = fmt.Sprintf("the file ends at byte %d inside a segment (%s) below offset %d, which was synced (%s): a crash cannot make a synced file shorter, so this is damage, not a torn tail; offsets %s are lost unless recovered from a copy; the server takes the log out of service and cuts nothing",
				dm.EndByte, dm.Reason, s.Region.Keep, c.keepSource(d.ID), offsetsText(f.FirstOffset, f.LastOffset))
			c.rep.add(f)
		case dm.File == newest && s.Region != nil:
			// Below a commit log these bytes were synced, and the server keeps the
			// file up to its durable end: cutting at the damage would only make
			// the offsets after it missing too.
			f.Detail += fmt.Sprintf("; the file was synced up to offset %d, so the server takes the log out of service: not a torn tail (%s)", s.Region.Keep-1, c.keepSource(d.ID))
			c.rep.add(f)
		case dm.File == newest:
			// Mid-file damage in the file being appended to: the server's recovery
			// would cut it there. Keep everything from the damage on in quarantine
			// first, so the whole segments after it are not lost with it.
			f.Repair = fmt.Sprintf("copy bytes %d..end of %s to %s/ (quarantine), then truncate the file there; offsets from %d on leave the log and new pushes reuse them",
				dm.StartByte, f.File, filepath.Join(dirQuarantine, d.Rel), dm.FirstOffset)
			c.plan(f, repairPlan{kind: planQuarantineTail, log: d, dmg: dm})
		default:
			f.Repair = splitText(d, dm.File, f.File)
			c.plan(f, repairPlan{kind: planQuarantine, log: d, dmg: dm})
		}
		planned[dm.File] = true
	}
	for _, name := range s.MissingIndexes {
		f := base
		f.Kind, f.Severity, f.File = KindIndexMissing, SeverityRepairable, filepath.Join(d.Rel, name)
		f.Detail = "index file missing"
		f.Repair = "rebuild " + f.File + " from the segments"
		add(f)
	}
	for _, name := range s.StaleIndexes {
		f := base
		f.Kind, f.Severity, f.File = KindIndexStale, SeverityRepairable, filepath.Join(d.Rel, name)
		f.Detail = "index file torn or disagrees with the segments"
		f.Repair = "rebuild " + f.File + " from the segments"
		add(f)
	}
	if v := s.Dedup; v != nil {
		f := base
		f.Kind, f.Severity, f.File = v.Kind, SeverityRepairable, filepath.Join(d.Rel, dedupFile)
		f.StartByte, f.EndByte = v.StartByte, v.EndByte
		f.Detail = "dedup index " + v.Detail
		f.Repair = "keep the entries before the first that fails and rebuild the rest of " + f.File + " from the segments"
		add(f)
	}
	for _, v := range s.DedupRuns {
		f := base
		f.Kind, f.Severity, f.File, f.EndByte = v.Kind, SeverityRepairable, filepath.Join(d.Rel, v.File), v.Size
		f.Detail = v.Detail
		f.Repair = "remove it and every later run of the log; their offsets are re-indexed from the segments"
		add(f)
	}
	if len(fixedByOpen) > 0 || len(s.Corrupt) > 0 {
		c.plans = append(c.plans, repairPlan{kind: planReopenLog, log: d, region: s.Region, findings: fixedByOpen})
	}
}

// newestBytes is the size of the log's newest segment file as scanned.
func newestBytes(s *logScan) int64 {
	if n := len(s.Files); n > 0 {
		return s.Files[n-1].Bytes
	}
	return -1
}

// gapFinding judges a gap in a log's offsets between two files. segment.Open
// serves a log across a gap only when the partition's QUARANTINE marker lists it
// (segment/quarantine.go), so a listed gap is info (exit 0); a gap the quarantine
// manifest explains but the marker does not list (a repair from before the marker
// existed, or a crash between the manifest line and the marker) is repairable by
// adding it to the marker; any other gap is damage.
func (c *checker) gapFinding(d datadir.LogDir, f Finding, dm damage, manifest offsetRanges) {
	f.Kind = KindOffsetGap
	marker, merr := segment.ReadQuarantine(d.Path)
	switch {
	case merr == nil && segment.QuarantineCovers(marker, dm.FirstOffset, dm.LastOffset):
		f.Severity = SeverityInfo
		f.Detail = fmt.Sprintf("quarantined range %d..%d: moved aside by an earlier repair and listed in %s; the server serves the partition and skips these offsets",
			dm.FirstOffset, dm.LastOffset, filepath.Join(d.Rel, segment.QuarantineFileName))
		c.rep.add(f)
	case merr == nil && manifest.covers(dm.FirstOffset, dm.LastOffset):
		f.Severity = SeverityRepairable
		f.Detail = fmt.Sprintf("offsets %d-%d were moved to quarantine by an earlier repair (%s) but %s does not list them, so the server refuses this partition",
			dm.FirstOffset, dm.LastOffset, filepath.Join(dirQuarantine, manifestName), segment.QuarantineFileName)
		f.Repair = fmt.Sprintf("add %d..%d to %s", dm.FirstOffset, dm.LastOffset, filepath.Join(d.Rel, segment.QuarantineFileName))
		c.plan(f, repairPlan{kind: planMarkQuarantined, log: d, dmg: dm})
	default:
		f.Severity = SeverityDamaged
		f.Detail = "offsets are not dense and increasing: " + dm.Reason
		if merr != nil {
			f.Detail += fmt.Sprintf(" (and the %s marker does not parse: %v)", segment.QuarantineFileName, merr)
		}
		c.rep.add(f)
	}
}

func offsetsText(first, last uint64) string {
	if first == 0 && last == 0 {
		return "(unknown: the segment header is damaged)"
	}
	return fmt.Sprintf("%d-%d", first, last)
}

// progressBar returns a bar over the bytes of every segment file, or nil when
// progress is off or the directory is small.
func (c *checker) progressBar() *progressbar.ProgressBar {
	if c.opts.Progress == nil {
		return nil
	}
	var total int64
	for _, d := range c.logs {
		_ = filepath.WalkDir(d.Path, func(_ string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if info, err := e.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil
		})
	}
	if total < largeDirBytes {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.opts.Progress),
		progressbar.OptionSetDescription("fsck"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// splitText says what --repair does about damage in a sealed file (segment.PlanSplit):
// the good segments keep serving, the damaged offsets become a gap, the original file
// is kept in quarantine. rel is the file relative to the data directory.
func splitText(d datadir.LogDir, name, rel string) string {
	qdir := filepath.Join(dirQuarantine, d.Rel)
	p, err := segment.PlanSplit(d.Path, name)
	if err != nil || len(p.Runs) == 0 {
		return fmt.Sprintf("move %s to %s/ (quarantine; never deleted), leaving a gap of the offsets it held", rel, qdir)
	}
	var keep, gaps []string
	for _, r := range p.Runs {
		keep = append(keep, fmt.Sprintf("%d-%d", r.FirstOffset, r.NextOffset-1))
	}
	for _, g := range p.Gaps() {
		gaps = append(gaps, fmt.Sprintf("%d-%d", g.First, g.Last))
	}
	return fmt.Sprintf("rewrite %s as its good segments (offsets %s keep serving), leave offsets %s as a gap listed in %s, and move the original file to %s/ (never deleted)",
		rel, strings.Join(keep, ", "), strings.Join(gaps, ", "), segment.QuarantineFileName, qdir)
}
