// Package streams is the state store of stream queries (spec 10, issue 12):
// the registry of queries and, per (query, source partition), a shard of
// key-value rows. It holds them in memory, encodes what the broker writes to
// its commit log (a Change inside a transaction's entry, a Query entry for a
// registration), and materializes them as files: one registry file and one
// snapshot file per shard, each a single frame of package record, written
// atomically (vfs.WriteFileAtomic) so that after a crash a file holds its old
// contents or its new ones.
//
// It must not know about the broker, HTTP or the commit log: the broker
// decides when a change is durable (its commit point), hands it here with the
// LSN of its entry, and asks which LSNs the files do not cover yet. Every
// apply is idempotent by LSN: a change at or below a shard's LSN, or older
// than its query's last reset, is skipped, so replaying the commit log over
// newer snapshots never regresses them.
//
// # Files
//
//	<data>/streams/queries                        the registry (magic "CSRG")
//	<data>/streams/<queryId>/<partitionId>        one shard's snapshot (magic "CSSN")
//
// Query and partition ids are UUIDs in their text form; names never become
// paths. A file left with the suffix ".tmp" is a write a crash cut short.
//
// # Layouts
//
// Integers are uvarint unless marked varint; str and bytes are a uvarint
// length and the bytes; ids are 16 raw bytes.
//
//	Query:     id [16] | name str | source str | sink str | config_hash str |
//	           createdAt varint µs | updatedAt varint µs
//	entry:     ver u8 (1) | reset u8 (0/1) | Query           (commit-log kind Stream)
//	registry:  ver u8 (1) | covers (LSN) | n | n × { Query | resetLSN }
//	Change:    query id [16] | partition id [16] | n | n × { op u8 (1 upsert, 2 delete) |
//	           key str | updatedAt varint µs | value bytes (upsert only) }
//	snapshot:  ver u8 (1) | query id [16] | partition id [16] | lsn | cycles | n |
//	           n × { key str | updatedAt varint µs | value bytes }   (keys ascending)
//
// A snapshot's lsn is the LSN of the last change it holds; the registry's
// covers is the LSN up to which every registry entry is in it, and a query's
// resetLSN the LSN of its last reset (shards older than it are stale).
package streams
