// Package notes owns what comb records about messages after they were
// pushed, without touching the append-only partition logs: deletion
// tombstones (DELETE /api/v1/messages/:partitionId/:transactionId) and trace
// events (POST /api/v1/traces, spec 9.3). A message is named by its partition
// id and offset; the store never reads a segment and knows nothing of HTTP,
// consumer groups or queues.
//
// Everything lives in one append-only file, <data>/notes/log, and in memory.
// An append returns after its bytes are written and fdatasync'd (concurrent
// appends share one sync), so an acknowledged note survives kill -9. The
// file holds records back to back, little-endian:
//
//	+-- u32 body length --+-- u32 CRC-32C (Castagnoli) of the body --+-- body --+
//
//	body, kind 1 (tombstone):  u8 1 | [16] partition id | uvarint offset
//	body, kind 2 (trace event): u8 2 | [16] partition id | uvarint offset
//	                          | [16] trace event id | varint created µs
//	                          | str transactionId | str consumer group
//	                          | str event type | str worker id
//	                          | uvarint n | n × str trace name
//	                          | str data (the JSON value as posted)
//	str = uvarint length | bytes
//
// Open reads the file whole. A record whose length runs past the end or
// whose CRC fails ends the readable part: the bytes from there on are a torn
// tail (an append a crash interrupted, never acknowledged) and are cut; Open
// reports how many bytes it cut.
//
// Bounds: notes go with their message's retention. Prune (called by the
// broker's maintenance task and before the trace listings) drops every note
// below its partition's first retained offset and every note of a partition
// that no longer exists; when dropped bytes outweigh live ones the file is
// rewritten (temp file, fsync, rename, fsync of the directory), so a crash
// leaves either the old or the new file. A message keeps at most
// MaxTracesPerMessage trace events.
package notes
