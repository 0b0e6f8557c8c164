// Package cursor owns the committed cursor and lease State of every
// (partition, consumer group), the subscription record of every (queue, group),
// opaque redo records of the broker, and the cursor journal that makes all of
// them durable (seed 004, "The consumption engine").
//
// It must not know about HTTP or the segment format: seeding a cursor reads a
// partition through the small PartitionView interface, and the ack and lease
// rules live in package lease. Files go through the vfs seam (Options.FS) and
// every frame through package record.
//
// # Group commit
//
// Changes are applied in memory at once. A single writer goroutine collects
// every change since the previous collection into one checkpoint and makes it
// durable with one write and one fdatasync: immediately when a caller is
// blocked in Wait, and at least every CheckpointInterval (5 ms) while anything
// changed. Wait returns once the checkpoint holding the caller's earlier
// changes is durable, so ten thousand acks inside one window cost one write
// and one sync. (The writer uses ordinary syscalls through vfs.File; the raw
// ones it once used to keep its scheduler P were measured and dropped, see
// docs/benchmarks.md, "Raw or ordinary syscalls for the cursor writer".)
//
// # A full disk is a state, not an error
//
// A checkpoint that cannot be written (ENOSPC or EDQUOT while preallocating,
// writing or rotating; any failed write) fails only its own generation: its
// Wait callers get a *CheckpointError (the broker answers 5xx and undoes what
// it changed for them), the changes stay in memory, marked changed again, and
// the next Wait (or the ticker, retryDelay later) tries again. Failure reports
// the state until a checkpoint succeeds. Only a failed fdatasync of the
// journal for another reason (EIO) is sticky: the kernel may have dropped
// pages it could not write, so nothing more is trusted to the file until a
// restart reads it back.
//
// A failed write may leave part of a frame in the preallocated space after
// the last checkpoint. The next attempt writes its frame at the same byte and
// zeros the rest of what the failed one may have touched (journal.dirtyEnd),
// in the same sync, so only zeros ever follow the last checkpoint once it
// returns. A crash in between finds those bytes as a torn last checkpoint:
// never acknowledged, dropped by the rules below. (A frame whose write
// succeeded but whose fdatasync failed with ENOSPC may still reach the disk
// before such a crash; the broker treats every failed Wait as an unknown
// outcome, which for a lease means it may come back until it expires and for
// an autoAck pop is the at-most-once delivery autoAck promises anyway.)
//
// # On disk (format 2)
//
//	<dir>/journal-<seq>.v2.log    checkpoints in order; <seq> (16 hex digits) is its first checkpoint
//	<dir>/snapshot-<seq>.v2.snap  all state as of checkpoint <seq> (written to .tmp, fsync, rename, fsync dir)
//	<dir>/quarantine/<journal>.<byte>  bytes recovery zeroed after the last checkpoint (kept for a person)
//
// Every checkpoint and every piece of a snapshot is one frame of package
// record (magic, body length u32, XXH64 of both, body; little-endian):
//
//	0       4          8                   16
//	+-------+----------+-------------------+------------------------------+
//	| magic | len u32  | xxhash64 u64      | body (len bytes)             |
//	+-------+----------+-------------------+------------------------------+
//	checkpoint: magic "CCP2", body = seq u64 LE | entries
//	snapshot:   magic "CSN2", body = kind byte | ...
//	              1 header:  upTo u64 LE                 (the first frame)
//	              2 entries: entries                     (about 1 MiB each)
//	              3 trailer: entry frames u64, entries u64 (the last frame)
//
// A checkpoint past 16 MiB of entries is split into several frames, each a
// checkpoint of its own with its own sequence number, released together. A
// journal file is preallocated: checkpoints are written back to back from
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
// half an extension is left; on a disk that cannot hold a whole extension it
// takes only the pages a checkpoint needs. A checkpoint then overwrites zeros
// that are already part of the file, so its fdatasync flushes data only: ext4
// has no size change to commit in its metadata journal (a 300-byte write +
// fdatasync took 0.14-0.17 ms instead of 0.20-0.28 ms on the benchmark
// machine; see BenchmarkCheckpointSync and docs/benchmarks.md). fallocate
// alone would not do: ext4 marks fallocated blocks unwritten, and converting
// them on the first overwrite is again a metadata commit. Preallocated space
// is also what lets consumption go on for a while on a disk that is full.
//
// The entries of a body each start with a tag byte (integers uvarint unless
// noted, strings uvarint length + bytes):
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
//	3 record:  id (> 0), length, bytes (an opaque redo record)
//	4 drop:    id (forget that record)
//
// An idle cursor (no lease) costs about 23 bytes per checkpoint entry.
// Each entry holds the key's full latest State, so replay is last-writer-wins
// and applying a checkpoint twice is harmless.
//
// Format 1 (journal-<seq>.log, snapshot-<seq>.snap: a 32-byte header of its
// own, records without ids; format_v1.go) is read once by Open and upgraded
// in place (upgrade.go): read with the format 1 decoder, written as a format 2
// snapshot (durable), then the format 1 files are removed. A crash at any
// point leaves either the format 1 files or a format 2 snapshot beside
// leftovers that the next Open removes.
//
// # Recovery and what survives a crash
//
// Everything a Wait returned for survives a crash or power loss. Open loads the
// newest snapshot (it must be a header, entry frames and a matching trailer,
// else a *CorruptionError) and replays the journal checkpoints with a higher
// sequence number, which must follow one another. Where a journal ends is
// record.Scan's rule (the first position that does not hold a whole, verified
// frame), and what follows decides:
//
//   - Nothing, or only zeros (preallocated space, or an extension cut short
//     by a crash): nothing is repaired; the next checkpoint is written there.
//   - A torn or damaged frame with no verified frame after it (a checkpoint
//     whose write or sync failed, or was cut by a crash; also non-zero bytes
//     after an all-zero header, a checkpoint whose first page never reached
//     the disk) in the journal the writer continues: it was never
//     acknowledged, because Wait returns only after the sync. Its bytes are
//     copied to quarantine/ (best effort: a full disk must not stop a start),
//     zeroed and synced, and RecoveryReport counts them (TornBytes, TornFile).
//   - Damage followed by a verified frame (record.TailCorrupt), anything but
//     zeros after the end of an older journal (nothing is written to a
//     journal after rotation), a sequence gap, or a checksum-valid body that
//     does not decode is not a torn write: Open returns a *CorruptionError
//     and changes nothing.
//
// A journal holding nothing (a rotation that got no checkpoint before a
// crash, or whose directory sync failed) is continued when it starts right
// after the last checkpoint and removed otherwise.
//
// Snapshots are taken in the background when the journal's logical end (not
// its preallocated size) passes SnapshotAfterBytes: a new journal starts at
// once (its name synced before its first checkpoint), the snapshot is
// written to a temporary file and synced, and renamed into place (then the
// directory synced) only once a checkpoint holding every change made before
// the snapshot read the state is durable: states are read live, and a live
// change may still be undone (a claim whose checkpoint failed), so the
// journal after the snapshot must hold whatever the snapshot holds that it
// must not keep. Only then are older journals (zero tails and all) and
// snapshots deleted. Snapshots are not preallocated. A rotation or snapshot
// that fails (a full disk) is retried retryDelay later; checkpoints go on in
// the current journal meanwhile.
package cursor
