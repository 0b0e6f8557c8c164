// Package datadir reads a comb data directory offline, read-only, as its
// server would recover it: the one view of a stopped (or live) directory that
// comb fsck (package fsck), comb dump (package dump) and comb replay (package
// replay) share, so the three never disagree on what a directory holds.
//
// It owns what an offline reader must know beyond the storage packages'
// formats: which log directories a data directory holds (ListLogs, Check),
// the registry the metadata journal and the commit log's later metadata
// entries name (ReadMeta, Meta.ApplyCommitLog), what the commit log holds
// (ReadWAL, EachCheckpoint: commitlog.Inspect, no torn tail zeroed), the
// start-up keep rule as the server applies it to each log (ReadRule,
// Rule.KeepBelow: package recovery given the summaries files and the commit
// log), and each log's records as the server serves them after recovery
// (Load, View.EachRecovered: its files below their durable end, then the
// segments only the commit log holds).
//
// It must not write: no file is created, cut or renamed, no lock is taken
// (so it is safe on a live server's directory, whose newest segment may then
// be cut short), and it knows nothing of HTTP, verdicts or repair (fsck owns
// those). The formats it reads are the storage packages' own decoders:
// segment.Scan and segment.DecodeSegment, index's decoders, meta.Read,
// commitlog.Inspect, walentry's payload codecs; docs/format.md describes them.
//
// What it reads (names from package layout):
//
//	<data>/meta/journal           ReadMeta: queue and partition names (meta.Read)
//	<data>/meta/clean, summaries  ReadRule: each log's synced length (segment.DecodeSummaries)
//	<data>/commitlog/             ReadWAL: metadata, push and DLQ entries; EachCheckpoint: cursor checkpoints
//	<data>/partitions/<id>/       ListLogs, ListSegFiles, ScanSegments, IndexEnd
//	<data>/dlq/<queueId>/         the same for dead-letter logs
package datadir
