package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/recovery"
	"github.com/combmq/comb/segment"
)

// Rule is the rule the server's start-up applies to each partition
// and DLQ log written behind the commit log (broker/open_startup.go, openByPlan):
// the files are trusted below a keep offset, everything they hold from it on
// was written unsynced (cut, segment.OpenFrom), and the commit log's
// segments from there on are appended again.
type Rule struct {
	Sums  map[[16]byte]segment.Summary // by partition id, or queue id for a DLQ
	Clean bool                         // Sums come from meta/clean: a clean shutdown
	WAL   *WAL                         // the commit log the rule is applied with (set before KeepBelow)
	// Ignored is the summaries file that does not decode ("" = none), and IgnoredErr why.
	Ignored    string
	IgnoredErr error

	once  sync.Once
	start recovery.Start // assembled from Sums and WAL at the first KeepBelow
}

// ReadRule reads the summaries the server would read: meta/clean when
// present (a clean shutdown; when it does not decode the server removes it
// and trusts no summary), else meta/summaries (when missing or damaged: no
// summary).
func ReadRule(dataDir string, wal *WAL) (*Rule, error) {
	r := &Rule{WAL: wal}
	for _, name := range []string{layout.Clean, layout.Summaries} {
		rel := filepath.Join(layout.Meta, name)
		data, err := os.ReadFile(filepath.Join(dataDir, rel))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sums, err := segment.DecodeSummaries(data)
		if err != nil {
			r.Ignored, r.IgnoredErr = rel, err
			return r, nil
		}
		r.Sums, r.Clean = sums, name == layout.Clean
		return r, nil
	}
	return r, nil
}

// KeepBelow returns the offset below which the server trusts log id's files
// (a partition's, or with dlq its queue's DLQ log), and ok=false when it
// opens the log as segment.Open does (verifying its tail, cutting a torn
// one). It asks the server's own rule, recovery.Start.Plan, with the facts
// broker/open_startup.go gives it, read offline: the summary's next offset
// (after a clean shutdown too: a file shorter than what was synced is
// damage, not a torn tail), the commit log's first base for the log, the
// partitions a retained metadata entry created, and (recovery.Start.Facts)
// a DLQ log nothing says was ever synced. (A summary whose stamp still
// matches the directory is opened without reading it; its files then end
// exactly at the summary's next offset, which the same keep describes.)
func (r *Rule) KeepBelow(id [16]byte, dlq bool) (uint64, bool) {
	r.once.Do(r.assemble)
	kind := recovery.Partition
	if dlq {
		kind = recovery.DLQ
	}
	plan := r.start.Plan(id, kind, nil)
	return plan.Keep, plan.Mode != recovery.Verify
}

// assemble builds the keep rule's input once: what the server's start-up
// builds in broker/open.go scanCommitLog.
func (r *Rule) assemble() {
	r.start = recovery.Start{ReplayBase: map[[16]byte]uint64{}, Created: r.WAL.Created}
	for id, l := range r.WAL.Logs {
		if base, ok := l.FirstBase(); ok {
			r.start.ReplayBase[id] = base
		}
	}
	if r.Sums != nil {
		r.start.SyncedNext = make(map[[16]byte]uint64, len(r.Sums))
		for id, s := range r.Sums {
			r.start.SyncedNext[id] = s.NextOffset
		}
	}
}
