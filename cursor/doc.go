// Package cursor owns the committed cursor and lease State of every
// (partition, consumer group) and the subscription record of every (queue,
// group) (seed 004, "The consumption engine"): the state in memory, the
// checkpoints that make its changes durable, and the snapshots that cover
// them.
//
// It must not know about HTTP, the segment format or the commit log's
// format: seeding a cursor reads a partition through the small PartitionView
// interface, the ack and lease rules live in package lease, checkpoints go to
// whatever implements Log (the broker's commit log), and snapshot files go
// through the vfs seam (Options.FS), every frame through package record.
//
// # Group commit through the commit log
//
// Changes are applied in memory at once. A single writer goroutine collects
// every change since the previous collection into one checkpoint body and
// hands it to Log.AppendCheckpoint, then waits until the log says it is
// durable: immediately when a caller is blocked in Wait, and at least every
// CheckpointInterval (5 ms) while anything changed. Wait returns once the
// checkpoint holding the caller's earlier changes is durable, so ten thousand
// acks inside one window cost one checkpoint, and the checkpoint shares the
// commit log's fdatasync with whatever else that group commit carries
// (pushes, transactions). The end of a checkpoint wakes only its own
// generation's callers: those whose changes came after its collection sleep
// on until the next one is durable.
//
// A checkpoint the log refuses (AppendCheckpoint fails, or its Wait does)
// fails only its own generation: its Wait callers get a *CheckpointError (the
// broker answers 5xx and undoes what it changed for them), the changed keys
// are handed back, and the next Wait (or the ticker, retryDelay later) writes
// their state as it is then. Failure reports the state until a checkpoint
// succeeds. Whether a failure is final is the log's call (Log.Retryable): a
// full disk (commitlog.ErrNoSpace) is retried; a failed write or fdatasync
// of the log (commitlog.ErrFailed) is sticky, and every Wait fails until a
// restart. A checkpoint whose wait failed may still be in the log after a
// crash; its keys were handed back, so a later checkpoint overwrites them.
//
// # Recovery
//
// Open loads the newest snapshot; the caller (the broker) then reads the
// commit log and applies, in LSN order, every checkpoint with an LSN >=
// RecoveryReport.ReplayFrom through ApplyCheckpoint, and calls Start. Each
// state entry holds the key's whole latest state, so replay is
// last-writer-wins and replaying a checkpoint the snapshot already covers is
// harmless. Everything a Wait returned for survives a crash or power loss:
// it is in the log, and the log is truncated only behind a snapshot that
// covers it.
//
// # Snapshots
//
// Snapshot (called by the broker's flush pass) writes all state and returns
// replayFrom, the LSN before which the log may be truncated. States are
// read live, shard by shard, while checkpoints go on, so replayFrom is the LSN
// of the first checkpoint whose collection ended after the read began (one
// collected before holds nothing newer than the read found; one collected
// after may hold a shard the read had passed). The file is renamed into place
// only once a checkpoint holding every change made before the read ended is
// durable: live state may hold a change that is not durable yet and that a
// caller may still undo (a claim whose checkpoint failed). When nothing was
// collected since the read began, the writer appends one checkpoint, empty
// if nothing changed, so an idle engine's replayFrom still moves to the end
// of the log and never pins it. One snapshot of 1,000,000 cursors is about
// 24 MB, 73-86 ms to encode and write and 83-230 ms with its fsyncs on the
// benchmark machine (BenchmarkSnapshot, docs/benchmarks.md).
//
// # On disk (format 3)
//
//	<dir>/snapshot-<replayFrom>.v3.snap   all state; <replayFrom> is 16 hex digits
//	<dir>/snapshot-next.v3.snap.tmp       a snapshot being written (removed by Open)
//
// Checkpoints live in the commit log, not here. A checkpoint body (the
// log's entry payload, framed and checksummed by the log) is
//
//	version byte (4) | clock varint µs | entries
//	version byte (3) | entries            (before issue 22; still read)
//
// clock is the writer's clock when it began collecting the body; a node
// applying another node's checkpoint (ApplyCommitted) rebases each lease
// expiry on its own clock, expiresAt - clock + now (format.go).
//
// Every piece of a snapshot is one frame of package record (magic, body
// length u32, XXH64 of both, body; little-endian):
//
//	0       4          8                   16
//	+-------+----------+-------------------+------------------------------+
//	| magic | len u32  | xxhash64 u64      | body (len bytes)             |
//	+-------+----------+-------------------+------------------------------+
//	snapshot: magic "CSN3", body = kind byte | ...
//	  1 header:  nothing more                    (the first frame)
//	  2 entries: entries                         (about 1 MiB each)
//	  4 legacy:  one redo record of a format 1 or 2 directory (opaque bytes)
//	  3 trailer: entry frames u64, entries u64, legacy records u64, replayFrom u64 (the last frame)
//
// A snapshot is complete only when it is exactly a header, entries and
// legacy frames and a trailer whose counts match (and whose replayFrom is
// the name's); anything else is a *CorruptionError, because the file was
// synced before its rename. Only the newest snapshot counts: the log may
// have been truncated behind it, so falling back to an older one could lose
// acknowledged changes. Writing one: temporary file, fsync, rename, fsync of
// the directory, then the older snapshots are removed (best effort).
//
// A checkpoint past 16 MiB of entries is cut into several bodies, each a
// checkpoint of its own with its own LSN, released together. The entries of
// a body each start with a tag byte (integers uvarint unless noted, strings
// uvarint length + bytes):
//
//	1 state:   partition [16]byte, group ref, flags byte, then unless deleted:
//	           committed, retries, [start, end, attempts], [lease id [16]byte],
//	           [worker id string], [expiresAt varint µs]
//	           group ref: an index into the names seen so far in this body;
//	           the next unused index is followed by the new name (a string)
//	           flags: bit0 deleted, bit1 span present, bit2 lease id present,
//	           bit3 worker present, bit4 expiry present
//	2 sub:     queue, group, deleted byte, then unless deleted:
//	           mode byte, timestamp (varint µs), createdAt (varint µs)
//
// An idle cursor (no lease) costs about 23 bytes per entry.
//
// # Formats 1 and 2, and the upgrade
//
// Before format 3 the directory held a journal of its own: format 2
// (journal-<seq>.v2.log, snapshot-<seq>.v2.snap; format_v2.go) and format 1
// (journal-<seq>.log, snapshot-<seq>.snap; format_v1.go), whose bodies also
// held the broker's transaction redo records (tags 3 and 4). Open reads such
// a directory once with the old rules (a torn last checkpoint of the newest
// journal was never acknowledged and is skipped; other damage is a
// *CorruptionError and nothing changes), writes it as one format 3 snapshot
// with replayFrom 1 (the commit log holds nothing older) and the redo records
// as legacy frames, then removes the old files and syncs the directory. A
// crash at any point leaves either the old files or the new snapshot beside
// leftovers that the next Open removes. The legacy records are handed out in
// RecoveryReport.LegacyRecords at every Open until the broker, having made
// their effects durable, calls ForgetLegacyRecords and the next snapshot
// leaves them out. A format 2 quarantine/ directory (torn checkpoints kept
// for a person) is left as it is.
package cursor
