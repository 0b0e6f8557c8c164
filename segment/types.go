package segment

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// Codec names how a segment's record block is stored (header flags bits 0-1).
type Codec uint8

// Codecs understood by format version 1. The reader learns the codec from the
// segment header alone; the writer picks it per segment (see Options.Codec).
const (
	CodecNone Codec = 0
	CodecS2   Codec = 1
	CodecZstd Codec = 2
)

// String returns "none", "s2", "zstd" or "codec(N)".
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecS2:
		return "s2"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// Record is one message as written by a push.
type Record struct {
	ID            [16]byte // UUIDv7
	TransactionID string
	TraceID       string // "" = none
	ProducerSub   string // "" = none
	Payload       []byte // JSON value exactly as pushed
	Extra         []byte // opaque, optional (the broker stores DLQ metadata here)
	// TxHash is index.HashTxn(TransactionID) when the caller computed it already (for its
	// dedup lookup, FindTransactionsHashed), 0 otherwise. Never stored or read back.
	TxHash uint64
}

// Message is one record as read back.
type Message struct {
	Offset          uint64
	TimestampMicros int64 // the segment timestamp (µs since Unix epoch); shared by all records of a segment
	Record                // byte slices and strings alias the ReadBuffer: valid until the buffer is reused or Reset
}

// Options configures a Log. Zero values mean the documented defaults.
type Options struct {
	MaxFileBytes     int64         // rotate the active file once it reaches this size (bytes); default 64 MiB
	MaxFileAge       time.Duration // rotate when the active file is older than this; 0 = never by age
	Codec            Codec         // preferred codec; the zero value is CodecNone (see DefaultCodec for the measured recommendation)
	MinCompressBytes int           // record blocks below this many bytes stay uncompressed; default 1024 (0 = default, <0 = always try)
	Handles          *HandleCache  // shared bound on open file handles (handles.go); nil = no bound, every Log keeps its active file open
	FS               vfs.FS        // the file system (package vfs); nil = vfs.OS

	// QuarantineDir is where Open keeps the non-zero bytes it cuts from a
	// torn tail (docs/format.md section 5 rule 2), as
	// <QuarantineDir>/<base name of the log directory>/<segment file>.from-<byte>.
	// "" keeps them in the log directory itself (a name Open ignores). The
	// broker sets <data>/quarantine/partitions, or <data>/quarantine/dlq.
	QuarantineDir string
	// KeepUnsynced makes OpenFrom copy the non-zero bytes it cuts or removes
	// at or after keepBelow to QuarantineDir first, as a torn-tail cut does:
	// for a caller whose commit log does not hold them (after a clean
	// shutdown nothing past the synced length was acknowledged, but a
	// person may want to see what was there). Off, OpenFrom cuts without a
	// copy (the commit log replays those bytes).
	KeepUnsynced bool
	// OnRecover, when set, receives what the log repaired on its own after
	// Open returned: a torn tail cut when a Log opened from a Summary is
	// first used, or a dedup.idx rebuilt at its first load because it was
	// damaged, torn or of an older version. (Open's own repairs are in the
	// RecoveryReport it returns.) It runs under the log's locks: it must
	// not call back into the Log.
	OnRecover func(dir string, rep *RecoveryReport)
	// DeferRotationSync makes rotation write nothing durable: the sealed
	// file is NOT fdatasynced and the directory NOT synced before the new
	// file is created (without it they are, so that a crash never leaves a
	// hole between files). The next Sync or Committer.Flush of the
	// Log syncs the sealed files still open for it, the active file and the
	// directory. Only for a caller that keeps what a crash may punch out of
	// the files elsewhere (the broker's commit log, issue 14) and opens the
	// log with OpenFrom, which cuts the unsynced region; docs/format.md
	// section 6.
	DeferRotationSync bool
}

// DefaultCodec is the codec the broker should ask for: measured on 100 × 200 B
// JSON segments, s2 costs little on append and read and shrinks the data
// (docs/benchmarks.md, section segment/).
const DefaultCodec = CodecS2

// Defaults for Options.
const (
	DefaultMaxFileBytes     = 64 << 20
	DefaultMinCompressBytes = 1024
)

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MinCompressBytes == 0 {
		o.MinCompressBytes = DefaultMinCompressBytes
	}
	return o
}

// RecoveryReport says what Open (or a later load, see Options.OnRecover)
// repaired; the zero value means nothing.
type RecoveryReport struct {
	TruncatedBytes                  int64  // bytes cut from the tail of the newest file
	TruncatedAt                     int64  // where the cut was made: the size of File afterwards
	LostFirstOffset, LostLastOffset uint64 // offsets of the records cut, when their headers were readable; 0,0 when none
	File                            string // the file that was truncated ("" when none)
	// Tail is what the cut bytes were, in package record's words:
	// TailZeros (zero bytes only: nothing was there), TailTorn (an
	// incomplete segment: a torn write of an append that never finished,
	// never acknowledged) or TailDamaged (a segment of full length that
	// fails its checksum, or a header that does not parse: a torn write, or
	// damage to an acknowledged segment).
	Tail record.Tail
	// KeptAt is the copy of the cut bytes (see Options.QuarantineDir); ""
	// when they were all zeros.
	KeptAt         string
	IndexesRebuilt []string // index files rebuilt from the segments (missing, torn or stale)
	// DedupRebuilt says why dedup.idx was rebuilt, in whole or from some
	// byte on, when it was loaded; "" when it was whole.
	DedupRebuilt string
	// Unsynced is what OpenFrom cut at and after its keepBelow offset (the
	// zero value for Open, and when there was nothing to cut).
	Unsynced UnsyncedCut
}

// UnsyncedCut is what OpenFrom removed from a log: bytes and files holding
// offsets at or after KeepBelow, written but never known to be synced. They
// are not lost: the caller's commit log holds those appends and replays
// them (docs/format.md section 5, "Opening below a commit log").
type UnsyncedCut struct {
	KeepBelow uint64 // OpenFrom's keepBelow
	// File is the segment file cut right after the segment ending at
	// KeepBelow-1 ("" when no file was cut); At its size afterwards, Bytes
	// how many bytes were cut from it (whatever they were: whole segments,
	// torn ones, zeros or garbage).
	File      string
	At, Bytes int64
	// Removed lists the segment files removed whole (their first offset was
	// at or after KeepBelow), with their sizes in RemovedBytes.
	Removed      []string
	RemovedBytes int64
	// DedupEntries counts the dedup.idx entries dropped (offsets at or
	// after KeepBelow).
	DedupEntries int
	// Kept lists the copies of the non-zero bytes cut or removed
	// (Options.KeepUnsynced); empty otherwise, or when they were all zeros.
	Kept []string
}

// Any reports whether the cut changed anything.
func (u UnsyncedCut) Any() bool {
	return u.Bytes > 0 || len(u.Removed) > 0 || u.DedupEntries > 0
}

// String words the cut for logs ("" when nothing was cut).
func (u UnsyncedCut) String() string {
	if !u.Any() {
		return ""
	}
	s := fmt.Sprintf("offsets from %d on were written but not synced; the commit log holds them and replays them:", u.KeepBelow)
	if len(u.Kept) > 0 {
		s = fmt.Sprintf("bytes past offset %d were written but never synced (no commit-log entry holds them: never acknowledged); kept in %s:", u.KeepBelow-1, strings.Join(u.Kept, ", "))
	}
	if u.File != "" {
		s += fmt.Sprintf(" cut %d bytes of %s at byte %d;", u.Bytes, u.File, u.At)
	}
	if len(u.Removed) > 0 {
		s += fmt.Sprintf(" removed %d files (%d bytes);", len(u.Removed), u.RemovedBytes)
	}
	if u.DedupEntries > 0 {
		s += fmt.Sprintf(" dropped %d dedup entries;", u.DedupEntries)
	}
	return strings.TrimSuffix(s, ";")
}

// Repaired reports whether Open (or OpenFrom) changed anything on disk.
func (r *RecoveryReport) Repaired() bool {
	return r != nil && (r.TruncatedBytes > 0 || len(r.IndexesRebuilt) > 0 || r.DedupRebuilt != "" || r.Unsynced.Any())
}

// TailText says in words what a cut tail was, for logs and fsck ("" when
// nothing was cut).
func (r *RecoveryReport) TailText() string {
	if r == nil || r.TruncatedBytes == 0 {
		return ""
	}
	return TailText(r.Tail, r.KeptAt)
}

// TailText words a torn tail of kind t whose bytes were kept at keptAt
// (docs/format.md section 5 rule 2).
func TailText(t record.Tail, keptAt string) string {
	var s string
	switch t {
	case record.TailZeros:
		return "zero bytes after the last whole segment (nothing was lost)"
	case record.TailTorn:
		s = "torn write: an incomplete segment, an append that never finished (never acknowledged)"
	default:
		s = "torn write or damage to an acknowledged segment: a segment of full length fails its checks"
	}
	if keptAt != "" {
		s += "; bytes kept at " + keptAt
	}
	return s
}

// Sentinel errors. Wrapped with the partition directory and position on the way up.
var (
	// ErrCorrupt is wrapped in a *CorruptionError for damage found in a segment file.
	ErrCorrupt = errors.New("segment: corrupt data")
	// ErrClosed is returned by methods of a closed Log or Committer.
	ErrClosed = errors.New("segment: closed")
	// ErrEmptySegment is returned by Append with no records.
	ErrEmptySegment = errors.New("segment: append of zero records")
	// ErrTooLarge is returned by Append when one segment would exceed MaxSegmentBytes.
	ErrTooLarge = errors.New("segment: segment too large")
	// ErrSyncFailed is wrapped by every Append and Sync of a Log after one of
	// its fdatasyncs failed. The kernel may have dropped the dirty pages and
	// cleared the error, so a later fdatasync that succeeds proves nothing:
	// the Log refuses further writes until it is reopened (which verifies the
	// tail again).
	ErrSyncFailed = errors.New("segment: an earlier sync failed; the log refuses writes until reopened")
	// ErrWriteFailed is wrapped by every Append and Sync of a Log after a
	// failed append could not be cut back to the file's previous end: the
	// file may end in a partial segment, and appending after it would put
	// whole segments behind damage (which recovery must refuse). The Log
	// refuses writes until it is reopened (recovery then cuts the partial
	// segment as a torn tail). A failed append that was cut back is not
	// sticky: the next Append may succeed (a full disk is an error, not a
	// state).
	ErrWriteFailed = errors.New("segment: a failed append could not be cut back; the log refuses writes until reopened")
	// ErrSegmentMismatch is wrapped by AppendSegment when a whole, valid
	// segment does not continue the log: its base offset is not
	// NextOffset() (the error says both). Not damage: the segment belongs
	// elsewhere in the log (already there, or after a gap).
	ErrSegmentMismatch = errors.New("segment: segment does not continue the log")
)

// CorruptionError describes on-disk damage: which file, which bytes and, where
// the damaged segment's header could still be read, which offsets.
type CorruptionError struct {
	File                    string
	StartByte, EndByte      int64  // [StartByte, EndByte) of the damaged range in File
	FirstOffset, LastOffset uint64 // offsets held by the damaged range; 0,0 when unknown
	Reason                  string
	// Tail classifies the damage in package record's words: TailCorrupt
	// when a whole, checksum-valid segment follows it in its file; for
	// damage that runs to the end of its file with none after it,
	// TailZeros (zero bytes only), TailTorn (an incomplete segment: a torn
	// write) or TailDamaged (a segment of full length that fails: a torn
	// write or damage to an acknowledged segment); TailClean (the zero
	// value) for a gap between files.
	Tail record.Tail
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s bytes [%d,%d) offsets %d-%d: %s: %v",
		e.File, e.StartByte, e.EndByte, e.FirstOffset, e.LastOffset, e.Reason, ErrCorrupt)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
