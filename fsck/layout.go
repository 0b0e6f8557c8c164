package fsck

import (
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
)

// Names inside a data directory that the checks and repairs report and
// write (package layout names them for the server and fsck alike;
// docs/format.md, sections 7 to 11, describes them). Reading a directory is
// package datadir's.
const (
	dirMeta         = layout.Meta
	dirCursor       = layout.Cursor
	dirPartitions   = layout.Partitions
	dirDLQ          = layout.DLQ
	dirQuarantine   = layout.Quarantine
	dirCommitLog    = layout.CommitLog
	metaJournalFile = meta.JournalFile // the journal's name inside dirMeta
	// The broker's start-up caches of every log's durable end (broker/open_startup.go,
	// broker/flush_summaries.go): one summaries file each (segment.DecodeSummaries).
	cleanFile     = layout.Clean     // written at a clean shutdown, taken at the next start
	summariesFile = layout.Summaries // rewritten by every flush pass
)
