// Package entrylog is the shared file of small partitions' records (issue
// 23): one append-only file of many partitions' segments, as BookKeeper's
// entry logs interleave ledgers, so that a partition needs no inode of its
// own (directory, DESCRIPTOR, segment file: ~1.2 ms of CPU on the project's
// VM, more than a whole push request) until it holds enough records to pay
// for them. The broker homes a small partition's segments here, byte for
// byte as its commit-log Push entries carry them, before the flush pass
// truncates the commit log past them; pops read them back by extent.
//
// It must not know about partitions' names, queues, the commit log or
// HTTP: a partition is a 16-byte id, a segment opaque bytes that package
// segment verifies (PeekSegment, DecodeSegment).
//
// # Files
//
//	<data>/small/00000000000000000001.elog   the first file
//	<data>/small/00000000000000000002.elog   the next (rotation past Options.MaxFileBytes, or compaction)
//
// # File header (48 bytes, little-endian)
//
//	0  magic "CMBE"
//	4  version u8 = 1
//	5  reserved, 3 zero bytes
//	8  file number u64 (= the name)
//	16 seed u64: the salt of every frame's checksum in the file (record.Format.Seed)
//	24 xxhash64 (seed 0) of bytes 0..23
//	32 synced u64: every byte of the file below it was covered by an fdatasync
//	40 xxhash64, seeded with the file's seed, of bytes 32..39
//
// Bytes 0..31 are written once, when the file is made; the synced slot (32..47)
// is rewritten in place by Sync after the frames' fdatasync, and synced again,
// so a slot that verifies never claims more than is durable. A slot that does
// not verify reads as "nothing known synced" (48) and is reported.
//
// # Frames (from byte 48)
//
// Package record's frames (magic "CMBF", the file's seed, bodies of 1 to
// MaxBody bytes), each body one entry:
//
//	kind u8 = 1 (segment) | partition id [16] | one whole segment (package segment's encoding, its own 48-byte header and checksum)
//	kind u8 = 2 (trim)    | partition id [16] | before u64: the partition's records at offsets below it are dead
//	                                            (^uint64(0): the partition left the file: deleted, or materialized in its own directory)
//
// # What is live (the index, rebuilt by Open's scan)
//
// Per partition: the segments of every file (in file-number order), less those
// whose offsets all lie below the partition's largest trim, less a second copy
// of a segment with the same base offset (compaction copies a file's live
// frames to the active file before it removes the old one; a crash between
// leaves both). A partition whose frames are all dead and whose trim frames
// are in no remaining file is forgotten.
//
// # Torn tail or damage (Open)
//
// Each file is scanned with record.Format.Scan from byte 48. Below the synced
// slot every frame must verify and decode: anything else is damage
// (*CorruptionError, errors.Is ErrCorrupt; the server does not start, comb
// fsck names the range). Past it the bytes were written unsynced (a power
// cut keeps any subset of their pages, so verified frames may follow zeros
// or garbage there): everything from the first frame that fails is cut, its
// non-zero bytes first copied to Options.QuarantineDir; the caller's commit
// log still holds whatever they carried.
//
// # Compaction
//
// A file other than the active one whose live frames are under a quarter of
// its bytes has them copied (frames unchanged) to the active file, with the
// trims still needed by frames left in other files; the active file is synced,
// then the old file removed and the directory synced.
//
// # How the broker uses it (broker/small.go, package smallfs)
//
// A new partition's segment.Log runs on the smallfs seam (vfs.FS): its
// segment file is its homed extents followed by an in-memory tail, its
// caches and DESCRIPTOR in memory. The flush pass homes each small
// partition's segments below the offset it records as synced (what the
// commit log made durable), calls Sync once, then Compact; a partition past
// the broker's threshold gets its own directory (smallfs.FS.Materialize)
// and a Dropped trim here. Start-up attaches every registered partition
// without a directory to its extents and replays the commit log into it.
package entrylog
