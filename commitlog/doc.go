// Package commitlog is comb's write-ahead log: one append-only, preallocated,
// segmented log per data directory into which everything that must be
// durable goes (push batches, transaction commits, metadata changes, cursor
// checkpoints), made durable by one committer goroutine with one fdatasync
// per group of waiting callers (group commit). The other files of a data
// directory (partition segment files, the cursor and metadata state) are
// materialized from it and synced lazily; the log is truncated only behind
// the point where everything it covers is durable there (the broker decides
// that point). It must not know what its entries mean: an entry is a kind
// byte and opaque bytes.
//
// # Files
//
//	<dir>/<first LSN, 16 hex digits>.wal   one file of the log, preallocated
//
// An LSN (log sequence number) numbers entries from 1, one more per entry
// across files. A file is prepared before any entry goes into it: created,
// its header frame written, zeros written up to its initial size (1 MiB),
// fdatasynced, and the directory synced; it is extended the same way
// (zeros written and synced, doubling up to 64 MiB) ahead of the batches,
// in the background. So writing a batch never changes a file's size or
// allocates a block (ext4 commits no metadata at a batch's fdatasync) and
// never runs out of space: Append reserves room in the preallocated space,
// and a full disk fails Append up front (ErrNoSpace), before a caller
// changed anything, never a batch in flight.
//
//	+--------------+---------+---------+-----+---------+-------------------+
//	| header frame | batch 1 | batch 2 | ... | batch n | 0 0 0 ... 0 0 0 0 |
//	+--------------+---------+---------+-----+---------+-------------------+
//	0                                       logical end ^       file size ^
//
// Frames are package record's: the header frame (magic "CMWH", unsalted) holds
//
//	version u8 (1) | salt u64 | created µs i64
//
// (a file's first LSN is its name: files are prepared ahead as
// "spare-<n>.wal" and renamed when the first batch goes into them)
// and every batch frame (magic "CMWB") is checksummed with XXH64 seeded with
// the file's random salt, so bytes a client controls (payloads inside push
// entries) can never form a batch frame that verifies in that file. A batch
// frame's body is
//
//	first LSN u64 | count u32 | count × (kind u8 | length uvarint | payload)
//
// # Group commit and what survives a crash
//
// Append copies an entry into the batch being gathered and returns at once
// with a Ticket; the committer takes the whole batch, writes it as one frame
// with one write, and (SyncAlways) fdatasyncs it before it closes the
// batch's ticket: Ticket.Wait returns nil only once the entry is durable.
// Entries appended while a batch is being synced form the next batch.
//
// With Options.GroupCommitWait above zero (SyncAlways only), the committer
// may hold a batch back before writing it, so that one fdatasync serves
// more callers: when at least two callers were seen blocked in Wait at once
// since the previous batch (peak) and callers recently came at most a
// quarter of the cap apart, it waits until peak callers wait on the batch,
// or the cap has passed, or Close. A lone caller never waits; neither does
// a moderate load, where the syncs cost little, nor a batch holding an
// entry Options.Urgent names. groupwait.go has the rule
// and why; GroupStats counts what it did. AwaitSync lets another writer of
// the device wait (bounded) for the batch being written and synced, so that
// its own fdatasync starts between the log's (the broker's flush pass,
// syncgate.go). With
// SyncInterval a batch is released after its write and a timer fdatasyncs
// the file every interval; with SyncNever only Close syncs. A file is
// fdatasynced before the first batch goes into the next one, so only the
// newest file can be torn.
//
// A failed write or fdatasync fails the log for good (ErrFailed): Linux may
// drop the dirty pages of a failed writeback and report the next fdatasync
// clean, so nothing may be promised after it until a restart verifies the
// file again.
//
// # Recovery (Open)
//
// Files are read in LSN order; every batch's first LSN must continue the
// one before. What follows the last verified batch of the newest file is
// judged by record.Scan's rule: zeros are the end; a torn batch (incomplete
// or failing its checksum, with nothing verified after it) was never
// acknowledged and is zeroed after a copy of its bytes goes to the quarantine
// directory; damage with a verified batch after it is corruption (ErrCorrupt:
// Open changes nothing), except under SyncInterval and SyncNever, where
// several unsynced batches can be torn at once and the damage is cut the same
// way (acknowledged but unsynced entries are what those policies may lose).
// Anything but zeros after the end of an older file is corruption. A newest
// file whose header never became durable (a crash while it was prepared)
// held no entry and is removed.
package commitlog
