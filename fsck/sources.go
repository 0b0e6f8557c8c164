package fsck

import (
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
)

// This file holds the narrow views fsck takes of the storage packages beyond
// package datadir's (what a directory holds): each is filled by a small adapter
// (wire_*.go) over that package's read-only entry point, so the checking and
// repair logic here does not depend on their internals, and tests can hand it
// crafted results.

// fileSummary is one segment file as scanned. LastOffset is derived from the next
// file's first offset (or the log's high-water mark for the newest file).
type fileSummary struct {
	datadir.SegFile
	Sealed     bool
	LastOffset uint64
}

// damage is one damaged byte range of a segment file.
type damage struct {
	File                    string // base name inside the log directory
	StartByte, EndByte      int64
	FirstOffset, LastOffset uint64
	Reason                  string
	Gap                     bool        // offsets not dense, rather than bytes damaged
	Tail                    record.Tail // segment.CorruptionError.Tail: what the damaged bytes are
}

// logScan is the read-only verdict on one segment.Log directory.
type logScan struct {
	Files                   []fileSummary
	FirstOffset, NextOffset uint64 // of the valid data; NextOffset-1 is the high-water mark
	Segments, Records       int64  // every whole segment found, unsynced ones included
	ScannedFiles            int    // segment files read (unsynced ones included)
	ScannedBytes            int64
	Torn                    *damage
	Corrupt                 []damage
	StaleIndexes            []string // base names of index files to rebuild
	MissingIndexes          []string
	Dedup                   *dedupVerdict // nil when dedup.idx is whole or absent
	DedupRuns               []runVerdict  // sealed dedup runs that fail their checks, interrupted run writes
	// An interrupted split (segment.PendingSplits): pending marker ranges, copies.
	PendingSplits []segment.OffsetRange
	SplitCopies   []string
	// Region is set for a log its server opens below a commit log
	// (datadir.Rule.KeepBelow); Unsynced counts the bytes past it.
	Region   *durableRegion
	Unsynced int64
}

func (s *logScan) highWater() uint64 {
	if s.NextOffset == 0 {
		return 0
	}
	return s.NextOffset - 1
}

// cursorEntry is one recovered (partition, group) state.
type cursorEntry struct {
	Partition [16]byte
	Group     string
	State     lease.State
}

// cursorView is the read-only recovery of the cursor snapshot (format 3),
// or of the journals of a format 1 or 2 directory.
type cursorView struct {
	Present bool
	Entries []cursorEntry
	Corrupt *damage // a damaged snapshot, or damage in format 1 or 2 journals
	// ReplayFrom is the snapshot's; Replayed counts the commit log's
	// checkpoints applied over it. CheckpointErr: one does not decode (the
	// server refuses to start).
	ReplayFrom    uint64
	Replayed      int
	CheckpointErr error
}
