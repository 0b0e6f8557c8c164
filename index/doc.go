// Package index owns comb's disposable per-partition indexes: the segment
// index (one fixed-size entry per segment: base offset, byte position,
// timestamp, record count), used for offset → (file, position) and
// timestamp → offset lookups, and the dedup index (xxhash64 of a
// transactionId → offset) in two forms: the append-only dedup file and
// sealed runs sorted by hash.
//
// Both are caches of the segment files: deleting, truncating or tearing them
// loses nothing, because package segment rebuilds them from the segments.
// This package must not know about HTTP, consumer groups, or how segments are
// encoded; it is handed entries and answers searches.
//
// Segment index file "<20-digit base offset>.idx", little-endian, mmap'd:
//
//	header (32 bytes)
//	  0  4  magic "CMBI"
//	  4  1  version (1)
//	  5  3  reserved, zero
//	  8  8  base offset of the segment file this index describes
//	 16 16  reserved, zero
//	entries (32 bytes each), one per segment, in file order
//	  0  8  base offset (first offset of the segment)
//	  8  8  byte position of the segment header in the segment file
//	 16  8  segment timestamp, µs since the Unix epoch
//	 24  4  record count
//	 28  4  low 32 bits of xxhash64(bytes 0..27 of this entry)
//
// The file may be longer than its entries (it grows in steps); the entries end
// at the first one whose check fails, whose count is 0, or which does not
// follow its predecessor (base must grow by the predecessor's count, position
// must grow).
//
// Dedup file "dedup.idx", little-endian, appended with plain writes; it holds
// the newest ids, those after the sealed runs. It decides exactly-once (a
// retried push whose entry is missing would be stored twice), so every byte
// of it is checked:
//
//	header (32 bytes): "CMBD" | version u8 (3) | 3 reserved zero bytes
//	                   | base u64 (the entries' offsets are above it) | 12 reserved zero bytes
//	                   | u32 CRC-32C of header bytes 0..27
//	entries (20 bytes each): xxhash64(transactionId) u64 | offset u64
//	                   | u32 check = CRC-32C continued from the check stored
//	                     before the entry, over the entry's bytes 0..15
//
// Offsets strictly increase; the valid prefix ends at the first entry whose
// check fails or whose offset does not increase. ScanDedup classifies what
// follows in package record's words (a verified entry after the damage,
// TailCorrupt, is damage to the file rather than a torn append). A file of
// another version is never read, only rebuilt. Entries are loaded into
// Table, an open-addressing hash table of 16 bytes per slot.
//
// Dedup run file (run.go), written once: the entries of a range of offsets
// sorted by hash, so that one is found by reading one page; memory keeps
// each page's first hash, a KFilter (a blocked Bloom filter) for a small
// run, and one KFilter of the whole partition (package segment/dedup):
//
//	header (32 bytes): "CMBR" | version u8 (1) | 3 reserved zero bytes | count u32
//	                   | first offset u64 | last offset u64 | u32 CRC-32C of bytes 0..27
//	page k:            up to 256 × (hash u64 | offset u64) sorted by (hash, offset)
//	                   | u32 CRC-32C continued from the header's over k (u32) and the entries
//
// docs/format.md describes both byte by byte.
package index
