package datadir

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/recovery"
	"github.com/combmq/comb/segment"
)

// Rule is the rule the server's start-up applies to each partition
// and DLQ log written behind the commit log (broker/open_startup.go, openLogAt):
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

// KeepBelow returns the offset below which the server trusts log id's files,
// and ok=false when it opens the log as segment.Open does (verifying its
// tail, cutting a torn one). It is the server's own rule (package recovery,
// also asked by broker/open_startup.go openLogAt), given what is read offline:
// the summary's next offset (after a clean shutdown too: a file shorter than
// what was synced is damage, not a torn tail), the commit log's first base
// for the log, and whether a retained metadata entry created it. (A summary
// whose stamp still matches the directory is opened without reading it; its
// files then end exactly at the summary's next offset, which the same keep
// describes.)
func (r *Rule) KeepBelow(id [16]byte) (uint64, bool) {
	f := recovery.Facts{Created: r.WAL.Created[id]}
	if s, ok := r.Sums[id]; ok {
		f.SyncedNext = s.NextOffset
	}
	if base, ok := r.WAL.Logs[id].FirstBase(); ok {
		f.ReplayBase = base
	}
	plan := recovery.Rule(f)
	return plan.Keep, plan.Mode != recovery.Verify
}
