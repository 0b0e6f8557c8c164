// Package segment owns one partition's append-only log: the segment file
// format, appends (one segment per push), one flush pass that syncs many logs
// (Committer), reads by offset, time lookups, the dedup lookup, torn-tail
// recovery, rotation, retention by whole file, and the read-only entry points
// for fsck: Verify (full scan), Scan (segment iterator) and the QUARANTINE
// marker (ReadQuarantine, AddQuarantined).
//
// Behind a commit log (issue 14) the log is the materialized read store: the
// caller appends with AppendTo, which hands back the segment's bytes for the
// commit log, and makes the files durable later on its own schedule
// (Committer.Mark and Flush; Options.DeferRotationSync keeps rotation off
// the sync path too; Committer.SetYield lets another writer of the device,
// the broker's commit log, go first before each of a pass's syncs). After a crash, OpenFrom(dir, opts, keepBelow) keeps
// only the offsets below keepBelow, the ones the caller knows were synced,
// and cuts whatever is at or after it without judging it (it may be
// anything: torn, zeros, garbage, whole files of an unsynced rotation); the
// caller then replays its commit log's segments with AppendSegment, which
// verifies each one and writes it byte for byte (openfrom.go, replay.go).
// It must not know about the commit log itself: keepBelow and the segment
// bytes are all it is told.
//
// Logs may share a HandleCache (handles.go) that bounds their open files
// together: a Log whose handles were closed (Release, or cache pressure)
// reopens its active file on its next use; OpenSummary opens a Log without
// reading its directory at all.
//
// It must not know about HTTP, JSON, consumer groups or leases: a payload is
// opaque bytes and a transaction id an opaque string. The mmap'd indexes are
// package index; this package keeps them in step with the segment files.
//
// A partition directory holds:
//
//	00000000000000000001.seg   segment file: segments, the first holding offset 1
//	00000000000000000001.idx   its segment index (package index); for the active file
//	                           only from its 16th segment, 1 MiB or sealing (lazyindex.go)
//	00000000000004194305.seg   the next file, named by its first offset (20 digits)
//	...
//	dedup.idx                  transactionId hashes → offsets of the newest ids, each entry checked (package segment/dedup, format in index)
//	dedup-F-L.run              a sealed dedup run: the ids of offsets F..L sorted by hash, in checked pages (package segment/dedup)
//	QUARANTINE                 offset ranges fsck --repair moved aside (quarantine.go); usually absent
//	NNNN.seg.split             a run of good segments of a split in progress (split.go); transient
//	NNNN.seg.from-B            bytes cut from a torn tail at byte B, when Options.QuarantineDir is ""
//
// A segment file is a sequence of segments, each one push to the partition:
//
//	+----------------------- header, 48 bytes, little-endian ----------------------+
//	| 0 magic "CMBS" | 4 version=1 | 5 flags (bits 0-1 codec) | 6 reserved u16     |
//	| 8 base offset u64 | 16 record count u32 | 20 record block length (raw) u32    |
//	| 24 segment timestamp µs i64 | 32 stored length u32 | 36 reserved u32         |
//	| 40 xxhash64 of header bytes 0..39 then the stored bytes, u64                 |
//	+------------------------------------------------------------------------------+
//	| stored bytes: the record block, compressed as one block by the codec          |
//	+------------------------------------------------------------------------------+
//
// The record block is the records back to back; a record is
//
//	uvarint body length | flags u8 | id [16] | uvarint len + transactionId
//	| [uvarint len + traceId]     (flags bit 0)
//	| [uvarint len + producerSub] (flags bit 1)
//	| uvarint len + payload
//	| [uvarint len + extra]       (flags bit 2)
//	| anything else up to the body length: ignored (room to grow)
//
// Recovery (Open; docs/format.md section 5 has the full rules). Only a torn
// tail is ever cut: damage in the newest file (partial header, short payload,
// checksum mismatch) with no whole, checksum-valid segment after it is
// truncated to the last whole segment, after its non-zero bytes are copied to
// the quarantine directory (keep.go: a full-length segment failing its
// checksum may be media damage to an acknowledged append, not only a torn
// write), and reported in the RecoveryReport (file, bytes, offsets, what the
// bytes were, where they went). Damage that a whole segment follows, damage found
// in a sealed file, and a gap between files that the QUARANTINE marker does
// not cover are never skipped or cut: Open fails with a *CorruptionError
// (file, byte range, offsets; errors.Is ErrCorrupt) and changes nothing, so
// acknowledged data is never dropped silently. Open reads only the tail after
// the newest file's last indexed segment unless it finds damage.
//
// OpenFrom (docs/format.md section 5, "Opening below a commit log") applies
// these rules below keepBelow only: a synced offset that is missing or damaged
// is a *CorruptionError there too.
//
// Writes never leave garbage behind an append: a failed write is cut back to
// the file's previous end (and may be retried); a failed cut, like a failed
// fdatasync, makes the Log refuse writes until reopened (ErrWriteFailed,
// ErrSyncFailed). fsck --repair splits a damaged sealed file into its good
// runs of segments (split.go), leaving only the damaged offsets as a gap the
// QUARANTINE marker covers, in an order that makes every crash harmless.
//
// docs/format.md is the byte-by-byte reference, with the recovery rules and
// what each sync policy promises.
package segment
