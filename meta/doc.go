// Package meta owns comb's metadata: the queue registry (queues with their
// labels and options, partitions, queue deletions) as an append-only journal,
// and the descriptor every partition and DLQ directory carries so that the
// registry can be rebuilt from the data alone. The broker (which applies it)
// and fsck, dump and replay (which read it offline) share this package; it
// must not know about HTTP, the engine or the segment format.
//
// # Files
//
//	<data>/meta/journal                 the metadata journal (below)
//	<data>/meta/journal.v1              a version 1 journal, kept after its upgrade
//	<data>/meta/maintenance             the maintenance modes (maintenance.go)
//	<data>/partitions/<id>/DESCRIPTOR   what the partition is (below)
//	<data>/dlq/<queueId>/DESCRIPTOR     what the DLQ's queue is
//	<data>/quarantine/meta/             cut journal tails (never deleted)
//
// # Journal
//
// A sequence of record frames (package record, magic "CMTJ", bodies of at
// most MaxBody bytes), each one metadata change. The broker acknowledges a
// change once its commit-log entry is durable; the journal is a snapshot of
// the registry that the flush pass writes whole (WriteJournal: temporary
// file, fdatasync, rename, directory fsync), opened by a KindCovers record
// that names the last commit-log entry it holds. A body starts with a kind
// byte and the 16-byte id of what it changes:
//
//	1 queue put:        id | createdAt varint µs | name | namespace | task |
//	                    n uvarint | n × option varint | flags uvarint
//	2 partition create: id | queue id [16] | createdAt varint µs | name
//	3 queue delete:     id
//	4 described:        id (zero) — every partition and DLQ directory created
//	                    before this record carries a DESCRIPTOR
//	5 covers:           id (zero) | lsn uvarint — the snapshot holds the
//	                    commit log's metadata entries up to lsn
//
// Strings are uvarint length + UTF-8 bytes, at most MaxStringBytes each. The
// options are the integer options of QueueOptions in their declared order
// (a shorter list decodes with defaults for the missing tail, so options can
// be added at the end) and the flags bit i = the i-th boolean option.
// WriteJournal refuses a record its reader would refuse (ErrRecordTooLarge), so
// nothing a client sends can make a journal that does not open.
//
// Opening applies record.Scan's tail rule: a torn tail (an incomplete frame)
// or a damaged last frame (full length, bad checksum: a torn write, or damage
// to an acknowledged record) is copied to <data>/quarantine/meta/ and cut,
// and reported; damage with a valid frame after it is ErrCorrupt and changes
// nothing. A version 1 journal (frames of u32 length + xxhash64, no magic) is
// read once and rewritten in this format, the old file kept as journal.v1.
//
// # Descriptors
//
// One record frame (magic "CMPD") in a file named DESCRIPTOR, written and
// synced (file, then directory) before the directory's first append:
//
//	version u8 (1) | kind u8 (1 partition, 2 DLQ) | queue id [16] |
//	queue createdAt varint µs | queue name | namespace | task |
//	partition id [16] | partition createdAt varint µs | partition name
//
// (a DLQ's partition fields are zero and empty). Labels are the queue's at
// the time the directory was made; options are not kept (a rebuilt queue
// gets the defaults, and the rebuild says so).
//
// # Rebuild
//
// Rebuild (used by `comb fsck --repair`) takes the records that survived in a
// lost, cut or damaged journal and adds, from descriptors, every queue and
// partition whose directory the journal does not name. The broker never
// deletes a directory that holds records unless the journal holds a delete
// record for its queue; a directory the journal does not name makes start-up
// refuse and point at `comb fsck --repair` (docs/operations.md).
package meta
