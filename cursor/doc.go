// Package cursor owns the committed cursor and lease State of every
// (partition, consumer group), the subscription record of every (queue, group),
// opaque redo records of the broker, and the cursor journal that makes all of
// them durable (seed 004, "The consumption engine").
//
// It must not know about HTTP or the segment format: seeding a cursor reads a
// partition through the small PartitionView interface, and the ack and lease
// rules live in package lease.
//
// # Group commit
//
// Changes are applied in memory at once. A single writer goroutine collects
// every change since the previous collection into one checkpoint and makes it
// durable with one write and one fdatasync (raw syscalls, so the writer keeps
// its scheduler P and releases waiters without queueing behind callers):
// immediately when a caller is blocked in Wait, and at least every
// CheckpointInterval (5 ms) while anything changed.
// Wait returns once the checkpoint holding the caller's earlier changes is
// durable, so ten thousand acks inside one window cost one write and one sync.
//
// # On disk
//
//	<dir>/journal-<seq>.log   checkpoints in order, never rewritten; <seq> (16 hex digits) is its first checkpoint
//	<dir>/snapshot-<seq>.snap all state as of checkpoint <seq> (written to .tmp, fsync, rename, fsync dir)
//
// A journal file is preallocated: checkpoints are written back to back from
// byte 0, and the file continues with zeros up to its size.
//
//	+--------------+--------------+-----+--------------+---------------------+
//	| checkpoint n | checkpoint   | ... | checkpoint m | 0 0 0 0 ... 0 0 0 0 |
//	+--------------+--------------+-----+--------------+---------------------+
//	0                                          logical end ^        file size ^
//
// The writer extends the file by writing zeros (as many bytes as the file
// holds, 64 KiB at first, at most Options.PreallocBytes, 4 MiB) and syncs the
// extension once, after releasing a checkpoint's waiters, whenever less than
// half an extension is left. A checkpoint then overwrites zeros that are
// already part of the file, so its fdatasync flushes data only: ext4 has no
// size change to commit in its metadata journal (a 300-byte write + fdatasync
// took 0.14-0.17 ms instead of 0.20-0.28 ms on the benchmark machine; see
// BenchmarkCheckpointSync and docs/benchmarks.md). fallocate alone
// would not do: ext4 marks fallocated blocks unwritten, and converting them on
// the first overwrite is again a metadata commit.
//
// Every checkpoint and every snapshot is one frame:
//
//	0      4     5     6        8                16               24               32
//	+------+-----+-----+--------+----------------+----------------+----------------+-----------+
//	| magic| ver | kind| unused |  seq (u64 LE)  | body len (u64) | xxhash64 (u64) | body ...  |
//	+------+-----+-----+--------+----------------+----------------+----------------+-----------+
//	magic "CCKP" (checkpoint) or "CSNP" (snapshot); ver 1; kind 1 = checkpoint, 2 = snapshot;
//	the checksum covers header bytes 0..23 and the body.
//
// The body is a sequence of entries, each starting with a tag byte (integers
// uvarint unless noted, strings uvarint length + bytes):
//
//	1 state:   partition [16]byte, group ref, flags byte, then unless deleted:
//	           committed, retries, [start, end, attempts], [lease id [16]byte],
//	           [worker id string], [expiresAt varint µs]
//	           group ref: an index into the names seen so far in this frame;
//	           the next unused index is followed by the new name (a string)
//	           flags: bit0 deleted, bit1 span present, bit2 lease id present,
//	           bit3 worker present, bit4 expiry present
//	2 sub:     queue, group, deleted byte, then unless deleted:
//	           mode byte, timestamp (varint µs), createdAt (varint µs)
//	3 record:  length, bytes (an opaque redo record)
//	4 drop:    forget every earlier redo record
//
// An idle cursor (no lease) costs about 23 bytes per checkpoint entry.
// Each entry holds the key's full latest State, so replay is last-writer-wins
// and applying a checkpoint twice is harmless.
//
// # Recovery and what survives a crash
//
// Everything a Wait returned for survives a crash or power loss. Open loads the
// newest valid snapshot and replays the journal checkpoints with a higher
// sequence number. Where a journal ends is decided by these rules, in order, at
// each frame position after the last valid checkpoint:
//
//   - A checkpoint header is never all zeros (it starts with the magic), so the
//     first position whose 32 header bytes (or whatever is left of the file,
//     if fewer) are all zeros is the logical end of the journal. If only zeros
//     follow, that is preallocated space (or an extension cut short by a
//     crash): nothing is repaired and the next checkpoint is written there.
//   - Non-zero bytes after that all-zero header are a checkpoint whose first
//     page never reached the disk (a torn write) when this is the newest
//     journal and no valid checkpoint frame follows: the file is truncated at
//     the end position and RecoveryReport counts every truncated byte.
//   - A frame that fails its checks (magic, version, length, checksum, or a
//     sequence gap) is a torn or corrupt final checkpoint when this is the
//     newest journal and no valid checkpoint frame follows it anywhere in the
//     rest of the file (zeros or not): it was never acknowledged, because Wait
//     returns only after the sync, so it is truncated away, with the zeros
//     after it, and reported (TornBytes, TornFile). The writer preallocates
//     again.
//   - Damage followed by a valid checkpoint, anything but zeros after the end
//     of an older journal (nothing is written to a journal after rotation), or
//     a checksum-valid body that does not decode is not a torn write: Open
//     returns a *CorruptionError and changes nothing.
//
// Snapshots are taken in the background when the journal's logical end (not
// its preallocated size) passes SnapshotAfterBytes: a new journal starts at
// once (preallocated before its first checkpoint), the snapshot is written to
// a temporary file, synced, renamed and the directory synced, and only then
// are older journals (zero tails and all) and snapshots deleted. Snapshots
// are not preallocated.
package cursor
