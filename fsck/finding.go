package fsck

import (
	"fmt"
	"strings"
)

// Kind names what a finding is about. The strings are part of the --json output and
// of docs/operations.md; do not rename them.
type Kind string

// Kinds of findings. Each comment says what --repair does about it.
const (
	// KindTornTail: the newest file of a partition log ends in bytes that are not a
	// whole segment, with no whole segment after them: zeros, an incomplete segment (a
	// torn write of an append that never finished: never acknowledged, a push is
	// answered only after its sync), or a full-length segment that fails its checksum
	// (a torn write, or damage to an acknowledged segment; the detail says which).
	// Repair copies the non-zero bytes to <data>/quarantine/ and truncates them.
	KindTornTail Kind = "torn_tail"
	// KindCorruptSegment: a segment fails its checksum or does not decode in a sealed
	// file, or in the middle of the newest file with valid segments after it. Repair of
	// a sealed file rewrites it as its good segments (segment.PlanSplit), moves the
	// original under <data>/quarantine/ and lists the damaged offsets, now a gap, in
	// the partition's QUARANTINE marker; the newest file is cut at the damage after its
	// tail is copied to quarantine. A person decides whether to restore the offsets.
	KindCorruptSegment Kind = "corrupt_segment"
	// KindSplitPending: a repair that split a damaged sealed file was interrupted
	// (copies of its good segments wait beside the log, the QUARANTINE marker has a
	// pending line). The partition serves meanwhile, with a wider gap. Repair
	// finishes the split, or undoes it when the damaged original is still in place.
	KindSplitPending Kind = "split_pending"
	// KindOffsetGap: offsets are not dense and increasing across segments or files.
	// Info when the partition's QUARANTINE marker lists the gap (the server skips
	// it); repairable when only the quarantine manifest explains it (repair adds it
	// to the marker); otherwise it needs a person.
	KindOffsetGap Kind = "offset_gap"
	// KindIndexMissing / KindIndexStale: an offset/time index file is missing, torn,
	// or disagrees with the segments. Repair rebuilds that file from the segments.
	KindIndexMissing Kind = "index_missing"
	KindIndexStale   Kind = "index_stale"
	// KindDedupStale: the dedup index ends in what a crash leaves (a torn or failing
	// last entry, zeros, entries past the high-water mark: it is never synced) or was
	// written by an older comb. Repair rebuilds it from the segments.
	KindDedupStale Kind = "dedup_stale"
	// KindDedupDamaged: the dedup index's header fails its check, or an entry fails its
	// check with verified entries after it: damage to the file, not a torn write. The
	// server never trusts an entry past the damage (it re-indexes them from the
	// segments, so no transactionId can be stored twice); repair does the same now.
	// Repairable (nothing acknowledged is lost), but the disk deserves a look.
	KindDedupDamaged Kind = "dedup_damaged"
	// KindJournalTornTail: the metadata journal ends in a partial or bad frame (a
	// crash mid-write). Repair truncates it; it was never acknowledged.
	KindJournalTornTail Kind = "journal_torn_tail"
	// KindJournalDamagedTail: a journal's last frame is whole but fails its checksum:
	// a torn write, or damage to an acknowledged record. Repair copies its bytes to
	// <data>/quarantine/ and cuts it (the metadata journal: partitions it named are
	// then rebuilt from their directories' descriptors).
	KindJournalDamagedTail Kind = "journal_damaged_tail"
	// KindJournalCorrupt: a journal frame is damaged with valid frames after it, or a
	// snapshot is damaged. For the cursor snapshot (or a format 1 or 2 checkpoint file
	// not yet upgraded) it needs a person (cursors would be lost); the metadata
	// journal is rebuilt from its valid records and the directories' descriptors (the
	// old file kept in <data>/quarantine/meta/). Damaged either way (exit 2): the
	// server refuses to start with it, and a rebuild loses a configure or delete
	// held in the damaged bytes.
	KindJournalCorrupt Kind = "journal_corrupt"
	// KindJournalMissing: meta/journal is missing while log directories exist. Repair
	// rebuilds it from the directories' descriptors (queue options fall back to the
	// defaults and are reported).
	KindJournalMissing Kind = "journal_missing"
	// KindJournalLegacy: a version 1 metadata journal; the server upgrades it (info).
	KindJournalLegacy Kind = "journal_legacy"
	// KindCursorPastEnd: a consumer group's cursor is past its partition's high-water
	// mark (data it refers to was lost). Repair clamps it to the high-water mark.
	KindCursorPastEnd Kind = "cursor_past_end"
	// KindOrphanPartition: a partition or DLQ directory the metadata journal does not
	// name. Repairable when its DESCRIPTOR says what it is (repair adds it to the
	// journal); info when it holds no records or belongs to a deleted queue (the
	// server removes it); needs a person when it holds records and no descriptor.
	KindOrphanPartition Kind = "orphan_partition"
	// KindCommitLogTornTail: the commit log's newest file ends in a batch that is
	// incomplete or fails its checksum with nothing verified after it: a torn
	// write of a batch whose fdatasync never returned (never acknowledged). The
	// server zeroes it at start; repair does it now (commitlog.Open), keeping
	// its bytes in <data>/quarantine/commitlog/.
	KindCommitLogTornTail Kind = "commitlog_torn_tail"
	// KindCommitLogCorrupt: the commit log is damaged where a crash cannot
	// have torn it: damage with a verified batch after it, a file that does
	// not continue the one before it, a damaged header or truncation point, an
	// entry that does not decode. The server refuses to start (under --sync
	// always); the entries after the damage were acknowledged. Needs a person.
	KindCommitLogCorrupt Kind = "commitlog_corrupt"
	// KindCommitLogMismatch: a segment the commit log holds (an acknowledged
	// push) differs from the segment at the same offsets in the partition
	// file's durable region, or that region has no segment there. Needs a
	// person.
	KindCommitLogMismatch Kind = "commitlog_mismatch"
	// KindCommitLogShortFile: the commit log's newest file is shorter than its
	// preallocation (commitlog.ErrShortFile): a batch runs past the end of the
	// file, or the file ends right after a batch with no zero byte after it.
	// The zeros are synced before any batch goes into them, so no crash leaves
	// that: the file was cut, and the batches past the cut were acknowledged.
	// The server refuses to start; the file is kept as it is. Needs a person.
	KindCommitLogShortFile Kind = "commitlog_short_file"
	// KindMissingOffsets: offsets the server must find in a log's files (below
	// its durable end: the summary the last flush pass wrote, or the first
	// commit-log entry of the log) are missing or cut short, or the commit log
	// continues past the end of the file's durable region: offsets in neither.
	// The server takes the partition out of service. Needs a person.
	KindMissingOffsets Kind = "missing_offsets"
	// KindShortFile: a log's newest segment file ends inside a segment (an
	// incomplete header or segment at the end of the file) below the offset
	// the server must find in it (its synced length: meta/clean after a clean
	// stop, meta/summaries after a flush pass, or the commit log's first
	// base). A crash cannot make a file shorter than what was synced, so this
	// is not a torn tail: the server takes the partition out of service and
	// cuts nothing (package recovery). Needs a person.
	KindShortFile Kind = "short_file"
	// KindUnsyncedTail: what the server's recovery does with a log written
	// behind the commit log: the bytes past its durable end were written but
	// never synced (a kill -9 or power loss leaves them whole, torn, zeros or
	// garbage) and are cut at start, and the records only the commit log holds
	// are appended again from it. Informational: nothing acknowledged is lost.
	KindUnsyncedTail Kind = "unsynced_tail"
	// KindSummariesIgnored: meta/clean or meta/summaries does not decode; the
	// server ignores it and verifies every log in full at start (they are
	// caches). Informational.
	KindSummariesIgnored Kind = "summaries_ignored"
	// KindStreamsCorrupt: a streams registry or shard snapshot file
	// (<data>/streams) fails its checksum or does not decode, or the commit log
	// ends before an LSN it holds (entries were lost). The server refuses to
	// start: a snapshot is the only copy of its state once the log was
	// truncated behind it. Needs a person.
	KindStreamsCorrupt Kind = "streams_corrupt"
	// KindStreamsStale: a shard snapshot of an unknown query, older than its
	// query's last reset, or of a partition the metadata does not name (its
	// queue was deleted). The server removes it at start; informational.
	KindStreamsStale Kind = "streams_stale"
	// KindNotesTornTail: <data>/notes/log (deletion tombstones and trace
	// events) ends in what a crash leaves after its last whole record: an
	// incomplete record, a whole last record failing its checksum, zeros, or
	// a header cut short. The server cuts it at start (notes.Open, the bytes
	// kept in <data>/quarantine/notes/); repair does it now the same way.
	KindNotesTornTail Kind = "notes_torn_tail"
	// KindNotesCorrupt: notes/log holds what a crash cannot leave: a header
	// that does not verify, damage with verified records after it, or a
	// verified record that does not decode. The server refuses to start.
	// Needs a person (moving the file aside starts the server without the
	// deletions and trace events it held).
	KindNotesCorrupt Kind = "notes_corrupt"
	// KindMaintenanceCorrupt: meta/maintenance does not decode. The server
	// refuses to start: it is the only record of which pushed messages push
	// maintenance still hides. Needs a person (moving it aside starts with
	// both modes off and the held messages visible).
	KindMaintenanceCorrupt Kind = "maintenance_corrupt"
	// KindAnalyticsIgnored: meta/analytics (the dashboard's per-minute
	// series) does not load; the server ignores it and starts the charts
	// blank. Informational.
	KindAnalyticsIgnored Kind = "analytics_ignored"
	// KindDescriptorDamaged: the DESCRIPTOR of a directory the metadata names
	// is missing (once every directory has one), does not decode, or
	// describes another directory. The server starts without it; it is what a
	// rebuild of meta/journal names the directory from. Repair writes it again
	// from the metadata; one describing another directory (copied or renamed)
	// is damaged and needs a person.
	KindDescriptorDamaged Kind = "descriptor_damaged"
	// KindSmallTornTail: a file of <data>/small (the shared file of small
	// partitions' records, package entrylog) ends, past its synced length, in
	// bytes that are not a whole frame (a crash mid-append: the commit log
	// still holds what they carried), or is the newest file with a header a
	// crash cut short. The server cuts it at start (entrylog.Open, the bytes
	// kept in <data>/quarantine/small/); repair does it now the same way.
	KindSmallTornTail Kind = "small_torn_tail"
	// KindSmallCorrupt: a file of <data>/small holds what a crash cannot
	// leave: a frame below its synced length that fails, a file shorter than
	// its synced length, damage with a verified frame after it, a header that
	// does not verify, a verified frame that does not decode. The server
	// refuses to start. Needs a person.
	KindSmallCorrupt Kind = "small_corrupt"
	// KindSmallSlot: a file's synced slot (its header's bytes 32..47) fails its
	// check; the server reads it as nothing synced and rewrites it at its next
	// sync. Informational.
	KindSmallSlot Kind = "small_slot"
	// KindQuarantined: an earlier repair moved data aside; informational.
	KindQuarantined Kind = "quarantined"
	// KindUnreadable: a file or directory could not be read at all.
	KindUnreadable Kind = "unreadable"
)

// Severity says whether a finding needs a person.
type Severity string

const (
	// SeverityRepairable: --repair fixes it without losing acknowledged data (exit 1).
	SeverityRepairable Severity = "repairable"
	// SeverityDamaged: acknowledged data is damaged or missing; a person decides (exit 2).
	SeverityDamaged Severity = "damaged"
	// SeverityInfo: worth knowing, nothing to do (exit 0).
	SeverityInfo Severity = "info"
)

// Finding is one thing fsck saw. Byte ranges are [StartByte, EndByte) in File;
// offsets are inclusive; zero values mean unknown or not applicable.
type Finding struct {
	Kind        Kind     `json:"kind"`
	Severity    Severity `json:"severity"`
	Queue       string   `json:"queue,omitempty"`
	Partition   string   `json:"partition,omitempty"`
	PartitionID string   `json:"partitionId,omitempty"`
	Group       string   `json:"group,omitempty"`
	File        string   `json:"file,omitempty"` // relative to the data directory
	StartByte   int64    `json:"startByte,omitempty"`
	EndByte     int64    `json:"endByte,omitempty"`
	FirstOffset uint64   `json:"firstOffset,omitempty"`
	LastOffset  uint64   `json:"lastOffset,omitempty"` // 0 with FirstOffset set: how many is unknown
	Detail      string   `json:"detail"`
	// Repair says what --repair does (dry run, check) or did (repair) about it; "" when
	// nothing can be done automatically.
	Repair   string `json:"repair,omitempty"`
	Repaired bool   `json:"repaired"`
	// RepairError is set when the repair was attempted and failed.
	RepairError string `json:"repairError,omitempty"`
}

// where renders the location part of a finding for the human summary.
func (f Finding) where() string {
	var parts []string
	if f.Queue != "" || f.Partition != "" {
		parts = append(parts, fmt.Sprintf("queue %q partition %q", f.Queue, f.Partition))
	}
	if f.PartitionID != "" {
		parts = append(parts, "id "+f.PartitionID)
	}
	if f.Group != "" {
		parts = append(parts, fmt.Sprintf("group %q", f.Group))
	}
	if f.File != "" {
		s := f.File
		if f.EndByte > 0 {
			s += fmt.Sprintf(" bytes [%d,%d)", f.StartByte, f.EndByte)
		}
		parts = append(parts, s)
	}
	switch {
	case f.FirstOffset != 0 && f.LastOffset == 0:
		parts = append(parts, fmt.Sprintf("from offset %d", f.FirstOffset))
	case f.FirstOffset != 0 || f.LastOffset != 0:
		parts = append(parts, fmt.Sprintf("offsets %d-%d", f.FirstOffset, f.LastOffset))
	}
	return strings.Join(parts, ", ")
}
