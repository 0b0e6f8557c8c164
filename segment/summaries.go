package segment

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/combmq/comb/record"
)

// A summaries file is a set of Summary values keyed by a 16-byte log id (a
// partition id, or a queue id for its DLQ log): the broker's clean-shutdown
// marker <data>/meta/clean and its summary checkpoint <data>/meta/summaries
// (issue 7; issue 14: the offset up to which each log's files are durable,
// which recovery keeps below the commit log), read offline by comb fsck. One
// frame of package record (magic "CMSM") whose body is
//
//	0        1          5
//	+--------+----------+------------------------------------+
//	| ver=3  | count u32| count × record (56 bytes)          |
//	+--------+----------+------------------------------------+
//	record: log id [16] | first offset u64 | next offset u64 | last segment timestamp µs i64
//	        | newest file's first offset u64 (0 = no file) | stamp u64 (0 = none: not trusted)
//
// Little-endian. A file that does not verify, or has another version, is
// refused (ErrBadSummaries): it is a cache, and its reader falls back to
// verifying every log (versions 1 and 2, which had their own framing,
// included).
const (
	summariesVersion    = 3
	summariesHeaderSize = 5
	summaryRecordSize   = 56
)

// summariesFormat frames a summaries file.
var summariesFormat = record.NewFormat("CMSM", 1<<30)

// ErrBadSummaries is wrapped by DecodeSummaries.
var ErrBadSummaries = errors.New("segment: damaged summaries file")

// EncodeSummaries returns the summaries file holding sums (in map order).
// Past 19 M entries they do not fit one frame: the file is then empty, and
// its reader verifies every log.
func EncodeSummaries(sums map[[16]byte]Summary) []byte {
	return AppendSummaries(make([]byte, 0, record.HeaderSize+summariesHeaderSize+len(sums)*summaryRecordSize), len(sums),
		func(yield func([16]byte, Summary)) {
			for id, s := range sums {
				yield(id, s)
			}
		})
}

// AppendSummaries appends the summaries file of the n entries each yields to
// b (each must yield exactly n).
func AppendSummaries(b []byte, n int, each func(yield func([16]byte, Summary))) []byte {
	b, start := summariesFormat.Begin(b)
	b = append(b, summariesVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	each(func(id [16]byte, s Summary) {
		b = append(b, id[:]...)
		b = binary.LittleEndian.AppendUint64(b, s.FirstOffset)
		b = binary.LittleEndian.AppendUint64(b, s.NextOffset)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.LastTimestampMicros))
		b = binary.LittleEndian.AppendUint64(b, s.ActiveBase)
		b = binary.LittleEndian.AppendUint64(b, s.Stamp)
	})
	b, _ = summariesFormat.Finish(b, start)
	return b
}

// DecodeSummaries decodes a whole summaries file. It never panics on any
// input.
//
// Errors: ErrBadSummaries (wrapped) for a file that is not exactly one
// verified frame of this version, or an entry whose offsets cannot be (next
// offset 0, first offset past next).
func DecodeSummaries(data []byte) (map[[16]byte]Summary, error) {
	b, size, err := summariesFormat.Next(data)
	if err != nil || size != len(data) {
		return nil, fmt.Errorf("%w: %v (%d of %d bytes framed)", ErrBadSummaries, err, size, len(data))
	}
	if len(b) < summariesHeaderSize || b[0] != summariesVersion {
		return nil, fmt.Errorf("%w: bad header", ErrBadSummaries)
	}
	n := int(binary.LittleEndian.Uint32(b[1:]))
	if len(b) != summariesHeaderSize+n*summaryRecordSize {
		return nil, fmt.Errorf("%w: %d bytes for %d records", ErrBadSummaries, len(b), n)
	}
	out := make(map[[16]byte]Summary, n)
	for r := b[summariesHeaderSize:]; len(r) >= summaryRecordSize; r = r[summaryRecordSize:] {
		var id [16]byte
		copy(id[:], r)
		s := Summary{
			FirstOffset:         binary.LittleEndian.Uint64(r[16:]),
			NextOffset:          binary.LittleEndian.Uint64(r[24:]),
			LastTimestampMicros: int64(binary.LittleEndian.Uint64(r[32:])),
			ActiveBase:          binary.LittleEndian.Uint64(r[40:]),
			Stamp:               binary.LittleEndian.Uint64(r[48:]),
		}
		if s.NextOffset == 0 || s.FirstOffset > s.NextOffset {
			return nil, fmt.Errorf("%w: log %x offsets %d..%d", ErrBadSummaries, id, s.FirstOffset, s.NextOffset)
		}
		out[id] = s
	}
	return out, nil
}
