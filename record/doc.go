// Package record is the framing every log-like file of comb shares (the
// metadata journal, the cursor snapshots, the maintenance,
// summary and partition descriptor files): a length, a checksum, and one rule
// for telling a torn tail from damage to acknowledged records. It must not
// know what the bodies mean.
//
// # Frame
//
//	0       4          8                   16
//	+-------+----------+-------------------+----------------------+
//	| magic | len u32  | xxhash64 u64      | body (len bytes)     |
//	+-------+----------+-------------------+----------------------+
//	checksum = XXH64(header bytes 0..7 ‖ body), seed 0; little-endian
//
// The magic (4 bytes, chosen per file kind by its Format) is never all zeros,
// so a header of zeros marks the end of a preallocated file. A body is 1 to
// Format.MaxBody bytes: Append refuses anything larger, so a reader never
// meets a valid frame it would refuse.
//
// # Where a file's frames end (Scan)
//
// Frames are read from byte 0 while they verify. At the first position that
// does not hold a whole, verified frame, what follows decides (Tail):
//
//   - TailClean: nothing follows.
//   - TailZeros: only zero bytes follow (preallocated space, or an extension
//     a crash cut short). Nothing is lost; the next frame goes there.
//   - TailTorn: a frame that starts there runs past the end of the data (or
//     fewer bytes than a header are left), and no verified frame follows:
//     the classic torn write of an append that never finished.
//   - TailDamaged: a frame of full length fails its checksum (or its header
//     is garbage), and no verified frame follows. This is a torn write if the
//     frame was never acknowledged, but it can also be media damage to an
//     acknowledged record: the caller keeps the bytes (quarantine) instead of
//     discarding them, and says so in both words.
//   - TailCorrupt: a verified frame follows the damage (at Scan.Resync).
//     Bytes acknowledged after the damage exist: nothing may be cut, the
//     file needs a person (comb fsck).
//
// A file's owner truncates at Scan.End only for TailTorn and TailDamaged,
// after copying the non-zero bytes it cuts to the quarantine directory.
package record
