// Package notes owns what comb records about messages after they were
// pushed, without touching the append-only partition logs: deletion
// tombstones (DELETE /api/v1/messages/:partitionId/:transactionId) and trace
// events (POST /api/v1/traces, spec 9.3). A message is named by its partition
// id and offset; the store never reads a segment and knows nothing of HTTP,
// consumer groups or queues.
//
// Everything lives in one append-only file, <data>/notes/log, and in memory.
// Apply writes a note without syncing it (the broker has made it durable in
// its commit log first, and calls Sync before dropping the entry); Delete and
// AddTrace return after their fdatasync (concurrent ones share one sync;
// Options.NoSync skips them). Apply skips a note it holds already, so a
// replay after a crash is idempotent. The file uses package record's framing: a header frame (magic "CMNH", body
// version u8 = 1 | seed u64), then one frame per note (magic "CMNR", its
// checksum seeded with the header's random seed, because trace data are
// client bytes), little-endian:
//
//	body, kind 1 (tombstone):   u8 1 | [16] partition id | uvarint offset
//	body, kind 2 (trace event): u8 2 | [16] partition id | uvarint offset
//	                          | [16] trace event id | varint created µs
//	                          | str transactionId | str consumer group
//	                          | str event type | str worker id
//	                          | uvarint n | n × str trace name
//	                          | str data (the JSON value as posted)
//	str = uvarint length | bytes
//
// Open reads the file whole and applies package record's tail rule: a torn
// or damaged last frame with nothing verified after it is copied to the
// quarantine directory and cut (reported); damage followed by a verified
// frame, a header that does not verify and a verified record that does not
// decode are a *DamageError (errors.Is ErrCorrupt, with the byte range) and
// nothing is cut. A file without a whole header (a crash while creating it:
// records come only after the header is durable) is created afresh. Check
// (comb fsck) runs the same read and says what Open would do, changing
// nothing.
//
// Bounds: notes go with their message's retention. Prune (called by the
// broker's maintenance task and before the trace listings) drops every note
// below its partition's first retained offset and every note of a partition
// that no longer exists; when dropped bytes outweigh live ones the file is
// rewritten (temp file, fsync, rename, fsync of the directory), so a crash
// leaves either the old or the new file. A message keeps at most
// MaxTracesPerMessage trace events.
package notes
