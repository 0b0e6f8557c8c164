package recovery

// Facts is what start-up knows of one log before it opens it. Offsets are
// the log's record offsets (they start at 1); 0 means "not known".
type Facts struct {
	// SyncedNext is the summary's next offset: the summaries file records
	// that every offset below it is durable in the log's files (0: no
	// entry for this log, or no summaries file that decodes).
	SyncedNext uint64
	// ReplayBase is the base offset of the log's first segment the commit
	// log still holds (0: none): the server appends the commit log's
	// segments from there on again, so the files are trusted below it.
	ReplayBase uint64
	// Created says a metadata entry the commit log still holds created the
	// log after the last metadata snapshot: nothing of it can have been
	// synced before that entry, so the files may be kept from offset 1.
	Created bool
	// Replicated says the log is behind a raft-replicated commit log: past
	// its summary the files may hold segments the cluster never committed,
	// and raft applies every committed entry after its last snapshot again
	// (broker/follow_commit.go). ReplayBase and Created do not apply.
	Replicated bool
	// Unchanged, when set, reports whether the log's files still carry the
	// summary's stamp (segment.SummaryMatches: two stats). It is called at
	// most once, only when an unchanged log could be opened from its
	// summary alone. nil: never (fsck reads every log).
	Unchanged func() bool
}

// Mode says how a log is opened.
type Mode int

const (
	// Verify: nothing says what was synced (a directory from before the
	// commit log): open the files as they are, cutting only a torn tail
	// after a copy of its bytes (segment.Open).
	Verify Mode = iota
	// Below: keep the offsets below Plan.Keep, which were synced: a segment
	// below it that is missing, cut short or fails its checksum is damage;
	// what lies at or after it was written unsynced and is cut
	// (segment.OpenFrom, read-only segment.PlanFrom).
	Below
	// Summary: the files are exactly as the summary describes them (its
	// stamp matches and the commit log holds nothing for the log): open
	// from the summary without reading them (segment.OpenSummary). Keep is
	// the summary's next offset, so a check that reads them anyway judges
	// them as Below.
	Summary
)

func (m Mode) String() string {
	switch m {
	case Verify:
		return "verify"
	case Below:
		return "below"
	case Summary:
		return "summary"
	}
	return "Mode(?)"
}

// Plan is Rule's answer: the mode, and for Below and Summary the offset
// below which the files must hold every offset (at least 1; 1 keeps
// nothing).
type Plan struct {
	Mode Mode
	Keep uint64
	// Quarantine (Below only) says no commit-log entry holds what the files
	// have at or after Keep (no ReplayBase; not replicated): it was never
	// acknowledged, and what is cut there is copied to quarantine first, as
	// a torn tail is (segment.Options.KeepUnsynced).
	Quarantine bool
}

// Rule decides how start-up opens a log from what it knows of it (Facts):
//
//   - a summary with its stamp still matching and no segment in the commit
//     log: Summary at the summary's next offset;
//   - a replicated log: Below max(summary's next offset, 1);
//   - a summary, a commit-log segment, or a creation the commit log holds:
//     Below max(summary's next offset, first commit-log base, 1) (1: nothing
//     of it was synced). After a clean shutdown this is the summary itself,
//     so a file cut after the stop is damage, not a torn tail. Without a
//     commit-log segment, what is cut past Keep is kept in quarantine
//     (Plan.Quarantine);
//   - none of these: Verify.
func Rule(f Facts) Plan {
	switch {
	case f.SyncedNext > 0 && f.ReplayBase == 0 && f.Unchanged != nil && f.Unchanged():
		return Plan{Mode: Summary, Keep: f.SyncedNext}
	case f.Replicated:
		return Plan{Mode: Below, Keep: max(f.SyncedNext, 1)}
	case f.SyncedNext > 0 || f.ReplayBase > 0 || f.Created:
		return Plan{Mode: Below, Keep: max(f.SyncedNext, f.ReplayBase, 1), Quarantine: f.ReplayBase == 0}
	}
	return Plan{Mode: Verify}
}
