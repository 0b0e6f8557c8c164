package segment

import (
	"errors"
	"fmt"
	"time"

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

// RecoveryReport says what Open repaired; the zero value means nothing.
type RecoveryReport struct {
	TruncatedBytes                  int64    // bytes cut from the tail of the newest file
	LostFirstOffset, LostLastOffset uint64   // offsets of the records cut, when their headers were readable; 0,0 when none
	File                            string   // the file that was truncated ("" when none)
	IndexesRebuilt                  []string // index files rebuilt from the segments (missing, torn or stale)
}

// Repaired reports whether Open changed anything on disk.
func (r *RecoveryReport) Repaired() bool {
	return r != nil && (r.TruncatedBytes > 0 || len(r.IndexesRebuilt) > 0)
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
	// ErrBadPolicy is returned by ParseSyncPolicy.
	ErrBadPolicy = errors.New("segment: unknown sync policy")
)

// CorruptionError describes on-disk damage: which file, which bytes and, where
// the damaged segment's header could still be read, which offsets.
type CorruptionError struct {
	File                    string
	StartByte, EndByte      int64  // [StartByte, EndByte) of the damaged range in File
	FirstOffset, LastOffset uint64 // offsets held by the damaged range; 0,0 when unknown
	Reason                  string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s bytes [%d,%d) offsets %d-%d: %s: %v",
		e.File, e.StartByte, e.EndByte, e.FirstOffset, e.LastOffset, e.Reason, ErrCorrupt)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
