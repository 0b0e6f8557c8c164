// Package dedup owns a partition log's dedup index: transactionId → offset of
// the newest retained record carrying it, which decides exactly-once for a
// retried push (Queen's scope: every retained message of the partition). It
// owns the index's state in memory (the active table of the newest ids, one
// Bloom filter of the whole partition over every sealed run's ids, so a new
// id costs one probe (global.go), and each run's page index, bitmap of
// verified pages and, for the small runs, filter), its files (dedup.idx and
// the sealed runs dedup-F-L.run, which lookups read through a read-only
// mapping where the file system allows: runmap.go), the
// seals, the background jobs (size-tiered merges of four runs, rewrites
// after retention, rebuilds of the partition's filter: merge.go), the load
// that trusts the files only as far as their checks verify, and the lookup
// that reads no entry of a run page before the page verified and verifies
// every hash match against the record.
//
// It must not know how records are stored or encoded: the log is a Source
// (first and next offset, a read by offset), handed in through Config with
// the hooks into the owner's handle and memory budgets. Package segment owns
// an Index per Log (segment/dedup_log.go is the seam); package index owns
// the byte formats and the table and filter structures; `comb fsck` checks
// run files with CheckRun, the decoder the load uses.
//
// Every file here is a cache of the segments and is never synced: deleting,
// truncating or damaging any of them loses nothing, because the load
// re-indexes from the segments whatever does not verify. A missing or wrong
// entry would let a retried push be stored twice, so nothing is trusted past
// the first byte that fails.
//
// Files in a partition directory (docs/format.md section 4, byte for byte):
//
//	dedup.idx       header (32 bytes): "CMBD" | version u8 (3) | 3 zero | base u64 | 12 zero | CRC-32C u32
//	                then 20-byte entries: hash u64 | offset u64 | CRC-32C chained from the previous check
//	dedup-F-L.run   header (32 bytes): "CMBR" | version u8 (1) | 3 zero | count u32 | F u64 | L u64 | CRC-32C u32
//	                then pages of up to 256 × (hash u64 | offset u64) sorted, each with a u32 CRC-32C
//	                continued from the header's over the page number and the entries
//
// Lifecycle: Init (config), then the first Find loads; Append keeps a loaded
// index current; Park closes its files and keeps memory (a handle cache
// release); Drop, DropParked, TryEvict and Undo leave memory; the owner's
// load of the next Find brings it back from the files.
package dedup
