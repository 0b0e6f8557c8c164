// Package fsck verifies and repairs a comb data directory offline: Run (comb
// fsck). It reads the directory through package datadir, the offline view it
// shares with package dump (comb dump) and package replay (comb replay).
//
// It owns the verdict on a directory as a whole: which damage is a torn write a
// crash leaves behind (repairable, never acknowledged to a client) and which is
// damage to acknowledged data that a person must look at, and the repair steps.
// It does not own any on-disk format: segments, indexes and the dedup index are
// judged by package segment (Verify) and index's decoders, the cursor snapshots by
// package cursor's own recovery, the metadata journal and descriptors by package meta; what
// the directory holds, and which part of each log the server keeps (the start-up keep rule),
// it takes from datadir. It must not know about HTTP, and never runs inside a server.
//
// # What a check reads (all read-only)
//
//	<data>/LOCK                    flock probe: a live server holds it → ErrLocked (Options.Force: read-only anyway)
//	<data>/meta/journal            queue and partition names (meta.Read), torn / damaged tail vs mid-file damage
//	<data>/*/<id>/DESCRIPTOR       what a directory the journal does not name is, and that every named
//	                               directory's own one decodes and describes it (meta.ReadDescriptor)
//	<data>/partitions/<id>/*.seg   segment.Verify: every checksum, record framing, dense increasing offsets
//	<data>/partitions/<id>/*.idx   each index against its segment file: header, entry chain, end offset
//	<data>/partitions/<id>/dedup.idx  header and entry checks (damage vs torn tail), entry order, nothing past the high-water mark
//	<data>/partitions/<id>/QUARANTINE offset ranges an earlier repair moved aside (segment.ReadQuarantine)
//	<data>/dlq/<queueId>/          the same for dead-letter logs
//	<data>/cursor/                 the snapshot, recovered on a temporary copy by cursor.Open; every
//	                               cursor and leased span ≤ its partition's high-water mark (snapshot
//	                               only: the cursor checkpoints in the commit log are not read yet)
//	<data>/partitions/<id>/dedup-*.run  sealed dedup runs, whole (dedup.CheckRun, the load's decoder)
//	<data>/streams/                streams.Files.Load: the registry and every shard snapshot
//	<data>/notes/log               notes.Check: notes.Open's own decoder and tail rule, nothing changed
//	<data>/meta/maintenance        meta.DecodeMaintenance, the decoder the server's start-up uses
//	<data>/meta/analytics          analytics.Load (a cache: the server ignores a file that does not load)
//
// Every file the server reads at start-up is read here with the server's own
// decoder (issue 21), and a file the server refuses to start with is never
// exit 0: it is damage (exit 2). startup_agree_test.go holds each file kind
// to that, byte flip, cut and appended garbage against the server's start.
//
// # Verdicts and exit codes
//
// Every finding has a Kind (finding.go; stable strings used by --json and
// docs/operations.md) and a Severity: repairable (exit 1: torn tails of the newest
// segment file or a journal, stale or missing indexes, a stale dedup index,
// cursors past the high-water mark, a gap the quarantine manifest explains but the
// QUARANTINE marker does not list), damaged (exit 2: checksum failures in a sealed
// file or mid-file, offset gaps nothing explains, damaged journal frames followed
// by valid ones, partitions the metadata does not name), info (exit 0: quarantined
// ranges the marker lists). ExitError (3) means the check could not run.
//
// # Repair, and what survives a crash during it
//
// --repair takes the LOCK for its whole run, then: cuts the metadata
// journal's torn or damaged tail after copying it to quarantine/meta/, or
// rebuilds the journal (meta.Rebuild: its valid records, what is still
// readable after mid-file damage, and every directory's descriptor; the old
// file kept in quarantine/meta/, the new one renamed into place); quarantines damage; reopens each
// affected segment log with segment.Open (which truncates its torn tail and
// rebuilds indexes, with fsyncs) and loads its dedup index once (which drops
// stale entries); re-scans those logs; reopens the cursor state with cursor.Open and clamps
// every cursor past its possibly lowered high-water mark, made durable as a new
// cursor snapshot with the old one's replayFrom. Each step is
// the storage package's own crash-safe recovery, so a crash mid-repair leaves a
// directory the next run (or the server) repairs the same way.
//
// Quarantine never deletes. A damaged sealed file is rewritten as its good runs of
// segments (segment.PlanSplit and Apply: each run a file of its own) and moved
// whole to <data>/quarantine/<partitions|dlq>/<id>/<file>; only the offsets of its
// damaged bytes become a gap, listed in the log's QUARANTINE marker, so the server
// serves the rest of the file and later checks report the gap as info
// ("quarantined range N..M", exit 0). The split's order makes a crash at any step
// harmless; a split cut short is finished by the next --repair (segment.FinishSplits,
// finding split_pending). A file whose good segments cannot be told apart is moved
// whole, its offsets listed in the marker first. Damage in the middle of the newest
// file has the bytes from the damage to the end copied there (fsync) before the file
// is cut, and the bytes segment.Open cuts from a torn tail are kept there too. Each
// move first appends a line to <data>/quarantine/manifest.jsonl (fsync; one line per
// damaged range of a split):
//
//	{"at":"2026-11-29T21:36:10Z","partitionId":"…","queue":"…","partition":"…",
//	 "original":"partitions/<id>/<file>","moved":"quarantine/partitions/<id>/<file>",
//	 "startByte":4350,"endByte":5078,"firstOffset":61,"lastOffset":120,"reason":"checksum mismatch …"}
//
// # Dump and replay
//
// They are packages of their own (dump, replay) over the same datadir view, so
// what they print and push is what this check judges: each log as the server
// serves it after recovery.
package fsck
