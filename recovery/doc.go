// Package recovery holds the start-up keep rule: how much of a log written
// behind the commit log (a partition's or a DLQ's segment files) a server
// keeps when it opens it again, decided by what was synced (issue 21 item 4;
// docs/format.md section 5, "Torn tail or damage"). The server's start-up
// (broker/open_startup.go) and comb fsck (datadir/recovery_rule.go) both ask
// Rule, so the offline check always judges a directory by the rule its server
// will apply.
//
// The rule in one sentence: every offset a summaries file (meta/clean after a
// clean shutdown, meta/summaries after a flush pass) records as synced must
// still be in the files, whole and checksum-valid, and only what lies past
// the synced length may be cut as a torn tail; a file shorter than that, or a
// segment below it that fails its checksum, is damage (the partition is taken
// out of service and its bytes are kept), never a torn write. A crash cannot
// make a file shorter than what was synced: kill -9 keeps the page cache, and
// a power cut loses only what no fdatasync covered.
//
// It is a leaf: it imports nothing of comb and knows no file format. Its
// callers turn the Plan into segment.OpenSummary, segment.OpenFrom or
// segment.Open (their read-only twin segment.PlanFrom for fsck).
package recovery
