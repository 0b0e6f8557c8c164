package recovery

// Start is what start-up reads of every log before it opens one: the synced
// ends a summaries file records (meta/clean after a clean shutdown, else
// meta/summaries) and the commit log's first read (the first segment base it
// still holds for each log, the partitions its retained metadata entries
// created). The server (broker/open_startup.go) and comb fsck each build one
// from the same files and ask Plan, so the offline check judges every log by
// the decision its server makes.
//
// Log ids are 16-byte UUIDs: a partition's id, or its queue's id for a DLQ
// log. Offsets are record offsets (from 1).
type Start struct {
	// SyncedNext is each summary's next offset, by log id. nil: no
	// summaries file decodes (missing or damaged), so nothing says what was
	// synced; an empty non-nil map: a summaries file with no entry.
	SyncedNext map[[16]byte]uint64
	// ReplayBase is the base offset of the first segment the commit log
	// still holds for the log (absent: none).
	ReplayBase map[[16]byte]uint64
	// Created holds the partitions a retained commit-log metadata entry
	// created after the last metadata snapshot.
	Created map[[16]byte]bool
	// Replicated: the commit log is raft-replicated (Facts.Replicated).
	Replicated bool
}

// Kind says which kind of log an id names.
type Kind int

const (
	Partition Kind = iota // a partition's segment log
	DLQ                   // a queue's dead-letter log
)

// Facts returns what s knows of log id, of the given kind.
//
// A DLQ log that neither a summary nor the commit log names, while a
// summaries file decodes, holds nothing that was ever acknowledged (issue
// 21): every flush pass records each open DLQ log in the summaries before
// the commit log drops its entries, and every DLQ log is open from start-up
// on. Its records were written by acks whose commit-log entries a crash
// lost, with the cursor moves after them, so their messages are delivered
// again and, kept, a second failure would dead-letter them twice. Facts
// marks it Created: nothing of it is kept (what is cut goes to quarantine).
func (s *Start) Facts(id [16]byte, kind Kind) Facts {
	next, synced := s.SyncedNext[id]
	base, replayed := s.ReplayBase[id]
	f := Facts{SyncedNext: next, ReplayBase: base, Created: s.Created[id], Replicated: s.Replicated}
	if kind == DLQ && s.SyncedNext != nil && !synced && !replayed {
		f.Created = true
	}
	return f
}

// Plan is Rule on s.Facts(id, kind), with unchanged as Facts.Unchanged (nil:
// the files are always read, as fsck does).
func (s *Start) Plan(id [16]byte, kind Kind, unchanged func() bool) Plan {
	f := s.Facts(id, kind)
	f.Unchanged = unchanged
	return Rule(f)
}
