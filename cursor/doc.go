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
//	<dir>/journal-<seq>.log   checkpoints, append-only; <seq> (16 hex digits) is its first checkpoint
//	<dir>/snapshot-<seq>.snap all state as of checkpoint <seq> (written to .tmp, fsync, rename, fsync dir)
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
// sequence number. A torn or corrupt final checkpoint (a crash mid-write) is
// truncated away and reported in RecoveryReport; it was never acknowledged,
// because Wait returns only after the sync. Damage followed by valid
// checkpoints is not a torn write and returns a *CorruptionError. Snapshots are
// taken in the background when the journal passes SnapshotAfterBytes: a new
// journal starts at once, the snapshot is written to a temporary file, synced,
// renamed and the directory synced, and only then are older journals and
// snapshots deleted.
package cursor
