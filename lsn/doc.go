// Package lsn owns the commit log's sequence numbers and the ticket an append
// hands back ("append, then wait"): the one shape the local commit log
// (package commitlog), the replicated one (package replica), the cursor
// engine's checkpoint log (cursor.Log) and the broker share (issue 26).
//
// It must not know about files, raft or entry kinds: a log makes a Ticket
// from the LSN it gave the entry and a Waiter that returns once the entry is
// durable. What durable means is the log's: for the local commit log, the
// fdatasync of the batch that holds the entry (or written, under the
// SyncInterval and SyncNever policies); for the replicated one, the raft
// commit on a quorum. A leaf: it imports nothing of comb.
package lsn
