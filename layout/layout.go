package layout

// Entries at the top of a data directory.
const (
	Lock       = "LOCK"       // the exclusive lock a running server holds (flock)
	Meta       = "meta"       // metadata journal, summaries, clean-shutdown marker, maintenance, analytics
	Cursor     = "cursor"     // the cursor log of older versions, read once at start-up
	Partitions = "partitions" // one segment log per partition, named by the partition's UUID
	DLQ        = "dlq"        // one segment log per queue's dead letters, named by the queue's UUID
	Quarantine = "quarantine" // damaged files moved aside, never deleted (one subdirectory per owner)
	CommitLog  = "commitlog"  // the commit log (write-ahead log of every change)
	Notes      = "notes"      // the note store (streams state and other small records)
	Raft       = "raft"       // raft's own log and snapshots in cluster mode
	Small      = "small"      // the shared file of small partitions' records (package entrylog)
)

// Files under Meta.
const (
	Summaries = "summaries" // each log's synced length after the last flush pass
	Clean     = "clean"     // written at a clean shutdown, taken at the next start
)
