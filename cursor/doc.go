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
// durable with one write and one fdatasync: immediately when a caller is blocked
// in Wait, and at least every CheckpointInterval (5 ms) while anything changed.
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
// The body (all integers uvarint unless noted, strings uvarint length + bytes):
//
//	groups:   n, then n group names (entries refer to them by index)
//	states:   n, then per entry:
//	            partition [16]byte, group index, flags byte
//	            (bit0 deleted, bit1 lease remembered, bit2 lease held),
//	            unless deleted: committed, retries,
//	            if remembered: start, end-start, attempts, and if held:
//	              lease id [16]byte, worker id string, expiresAt (varint µs)
//	subs:     n, then per entry: queue, group, flags (bit0 deleted), mode byte,
//	          timestamp (varint µs), createdAt (varint µs)
//	records:  flags (bit0 drop every earlier record), n, then n byte strings
//
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
