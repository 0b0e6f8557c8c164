// Package replay pushes messages from a comb data directory or a `comb dump
// --payload` file to any Queen-compatible broker over HTTP (comb replay).
//
// Per partition in offset order, one push in flight per partition, keeping
// each message's transactionId so the target's dedup makes re-sends
// harmless; from a data directory each target queue is first configured like
// its source queue (config.go) and encrypted payloads are opened with the
// server's keys and pushed only where they are sealed again. A resume-state
// file (state.go: written to a temporary file, fsynced, renamed, the
// directory fsynced) records after each accepted batch the last offset the
// target took, so an interrupted replay resumes without duplicates.
//
// It reads a data directory only through package datadir (the records the
// server would serve after recovery, those only the commit log holds
// included) and a dump file through package dump's Record line. It must not
// know about fsck's verdicts, and never writes to the source.
package replay
