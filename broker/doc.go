// Package broker is the engine behind the Queen v1 API: it ties the segment
// logs (package segment), the cursor engine (package cursor) and the lease and
// ack rules (package lease) together. It owns the queue registry and options,
// push routing and deduplication, pop candidate selection (oldest ready
// partition first), the long-poll wake gates, ack resolution with the DLQ,
// transactions, seeks, group and queue deletion, and recovery after a crash.
//
// It must not know about HTTP: httpapi parses requests into the types of
// api.go and encodes the results; every rule of spec sections 1-8 and seed 000
// lives here or below.
//
// # Data directory
//
//	<data>/LOCK                      flock'd while a broker has the directory open
//	<data>/meta/journal              the metadata journal (package meta)
//	<data>/meta/clean                clean-shutdown marker: per-partition offsets + file stamps (startup.go); renamed to summaries by Open
//	<data>/meta/summaries            summary checkpoint, same format, rewritten every 10 s (summaries.go)
//	<data>/meta/maintenance          push/pop maintenance modes and held partitions' published marks (maintmode.go)
//	<data>/cursor/                   cursor.Engine: cursors, leases, subscriptions, redo records
//	<data>/partitions/<partitionId>/ one segment.Log per partition (UUIDv7 directory name) + DESCRIPTOR
//	<data>/dlq/<queueId>/            one segment.Log per queue of dead-lettered messages + DESCRIPTOR
//
// Queue and partition names never become paths.
//
// # Scale (issue 7)
//
// Partition logs share a segment.HandleCache (Config.MaxOpenFiles) so open
// files stay bounded whatever the number of partitions; a maintenance task
// (evict.go) releases logs unused for Config.IdleEvict (seed 004) and applies
// retention (retention.go); after a clean Close, Open reads the marker
// instead of the logs (startup.go), and after a crash the last summary
// checkpoint (summaries.go): either way a partition's summary is used only
// while its directory and newest file still carry the stamp (two stats)
// taken with it, else its log is opened and its tail verified. A new
// partition is a mkdir (create.go), its files come with its first append.
// maxSize reads a per-queue pending counter (pending.go).
//
// # Metadata
//
// Queues, partitions and queue deletions live in the metadata journal of
// package meta, fsynced before a change is acknowledged; every partition and
// DLQ directory carries a meta.Descriptor written before its first append.
// Open applies the journal (metadata.go) and the start-up rule: directories
// of deleted queues and directories without records that the journal does
// not name are removed; any other such directory makes Open fail with
// ErrStrayData (comb fsck --repair rebuilds the journal from descriptors).
//
// # Locks
//
// Lock order: metadata (Broker.metaMu, held across the syncs of creating,
// configuring and deleting) → registry (Broker.mu, never across a sync) →
// queue (queue.mu) → partition
// (partition.mu, several in id order for a transaction) → ready structure
// (groupReady.mu) / DLQ log (queue.dlqMu). The partition lock guards appends
// and every read-modify-write of a (partition, group) State; there is no
// global lock on the push, pop or ack paths. Parked long-polls hold no lock.
//
// # Durability
//
// Push answers after a group commit of every log it touched (segment.Committer);
// only then are the messages visible to pops (partition.visible). Pop, ack,
// extend and seek answer after cursor.Engine.Wait, i.e. after the checkpoint
// holding their change is durable. DLQ entries are synced before the cursor
// passes their message. A transaction's commit point is its durable redo
// record (see Transaction and docs/architecture.md).
//
// When that checkpoint fails (a full disk: issue 10, "a state, not an error")
// the request answers 5xx and puts back the states it changed, unless someone
// changed them since (undo.go): a pop releases its claims, so no lease
// outlives the error and the group is served again as soon as checkpoints
// succeed; an ack (except one that dead-lettered: its DLQ copies are durable
// already), an extend and a seek are undone; a transaction drops its redo
// record. CheckpointFailure reports the state for GET /health.
//
// # Encryption at rest
//
// atrest.go (spec 9.2, issue 11): a payload pushed to a queue with
// encryptionEnabled is sealed with Config.Keys (package seal) before it goes
// into a redo record or a segment, so no file holds it in clear; pop and the
// DLQ listing open it again, and a payload no configured key opens is handed
// out as Message.PayloadError, never as ciphertext.
package broker
