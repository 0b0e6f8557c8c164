package entrylog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
)

// File layout constants (docs/format.md section 12; the package comment).
const (
	// HeaderSize is the bytes of a file before its first frame.
	HeaderSize = 48
	// Version is the file format version in byte 4 of the header.
	Version = 1
	// MaxBody bounds one frame's body: a segment of a small partition is
	// far smaller (the broker materializes a partition past its threshold),
	// and a damaged length can never ask for more.
	MaxBody = 16 << 20
	// FileSuffix ends every entry log file's name.
	FileSuffix = ".elog"
)

// Entry kinds (the first byte of a frame's body).
const (
	KindSegment = 1
	KindTrim    = 2
)

// Dropped is the trim point of a partition that left the file (deleted, or
// moved into its own directory): every offset is below it.
const Dropped = ^uint64(0)

var (
	fileMagic  = [4]byte{'C', 'M', 'B', 'E'}
	frameMagic = "CMBF"
)

// ErrCorrupt is wrapped by every error about bytes that do not decode.
var ErrCorrupt = errors.New("entrylog: corrupt")

// fileHeader is a decoded file header.
type fileHeader struct {
	seq    uint64
	seed   uint64
	synced int64 // HeaderSize when the slot does not verify (slotOK false)
	slotOK bool
}

// frameFormat is the record framing of a file with this seed.
func frameFormat(seed uint64) record.Format {
	return record.NewFormat(frameMagic, MaxBody).WithSeed(seed)
}

// putHeader encodes h's fixed part and its synced slot.
func putHeader(b []byte, h fileHeader) {
	_ = b[HeaderSize-1]
	copy(b, fileMagic[:])
	b[4] = Version
	b[5], b[6], b[7] = 0, 0, 0
	binary.LittleEndian.PutUint64(b[8:], h.seq)
	binary.LittleEndian.PutUint64(b[16:], h.seed)
	binary.LittleEndian.PutUint64(b[24:], xxhash.Sum64(b[:24]))
	putSlot(b[32:48], h.seed, h.synced)
}

// putSlot encodes the synced slot (16 bytes).
func putSlot(b []byte, seed uint64, synced int64) {
	binary.LittleEndian.PutUint64(b, uint64(synced))
	binary.LittleEndian.PutUint64(b[8:], slotSum(seed, b[:8]))
}

func slotSum(seed uint64, v []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(seed)
	_, _ = d.Write(v)
	return d.Sum64()
}

// parseHeader decodes a file header. Errors (wrapping ErrCorrupt): a short
// or unknown header, a checksum mismatch, a file number other than want
// (0: any). A synced slot that fails its check is not an error: slotOK is
// false and synced is HeaderSize.
func parseHeader(b []byte, want uint64) (fileHeader, error) {
	if len(b) < HeaderSize {
		return fileHeader{}, fmt.Errorf("partial header (%d of %d bytes): %w", len(b), HeaderSize, ErrCorrupt)
	}
	if [4]byte(b[:4]) != fileMagic {
		return fileHeader{}, fmt.Errorf("bad magic %x: %w", b[:4], ErrCorrupt)
	}
	if b[4] != Version || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return fileHeader{}, fmt.Errorf("unknown version %d or reserved bytes set: %w", b[4], ErrCorrupt)
	}
	if xxhash.Sum64(b[:24]) != binary.LittleEndian.Uint64(b[24:]) {
		return fileHeader{}, fmt.Errorf("header checksum mismatch: %w", ErrCorrupt)
	}
	h := fileHeader{seq: binary.LittleEndian.Uint64(b[8:]), seed: binary.LittleEndian.Uint64(b[16:])}
	if want != 0 && h.seq != want {
		return h, fmt.Errorf("header names file %d, the name %d: %w", h.seq, want, ErrCorrupt)
	}
	h.synced, h.slotOK = HeaderSize, false
	if slotSum(h.seed, b[32:40]) == binary.LittleEndian.Uint64(b[40:]) {
		if s := int64(binary.LittleEndian.Uint64(b[32:])); s >= HeaderSize {
			h.synced, h.slotOK = s, true
		}
	}
	return h, nil
}

// Entry is one decoded frame body.
type Entry struct {
	Kind      byte
	Partition [16]byte
	// Segment (KindSegment): the segment's bytes, aliasing the body, and
	// what its header says.
	Segment  []byte
	Base     uint64
	Count    uint32
	TsMicros int64
	// Before (KindTrim): the trim point.
	Before uint64
}

// Next is the offset after a segment entry's last record.
func (e *Entry) Next() uint64 { return e.Base + uint64(e.Count) }

// appendSegmentBody appends a segment entry's body to dst.
func appendSegmentBody(dst []byte, id [16]byte, seg []byte) []byte {
	dst = append(dst, KindSegment)
	dst = append(dst, id[:]...)
	return append(dst, seg...)
}

// appendTrimBody appends a trim entry's body to dst.
func appendTrimBody(dst []byte, id [16]byte, before uint64) []byte {
	dst = append(dst, KindTrim)
	dst = append(dst, id[:]...)
	return binary.LittleEndian.AppendUint64(dst, before)
}

// DecodeEntry decodes one frame body (the framing already verified). A
// segment's header is checked (segment.PeekSegment: its rules and exact
// length), not its checksum: DecodeSegment checks that where it is read.
//
// Errors: ErrCorrupt (wrapped) for anything but a body this package wrote.
// Never panics on any input.
func DecodeEntry(body []byte) (Entry, error) {
	var e Entry
	if len(body) < 17 {
		return e, fmt.Errorf("entry of %d bytes, shorter than a kind and an id: %w", len(body), ErrCorrupt)
	}
	e.Kind = body[0]
	copy(e.Partition[:], body[1:17])
	rest := body[17:]
	switch e.Kind {
	case KindSegment:
		base, count, ts, err := segment.PeekSegment(rest)
		if err != nil {
			return e, fmt.Errorf("segment entry: %v: %w", err, ErrCorrupt)
		}
		e.Segment, e.Base, e.Count, e.TsMicros = rest, base, count, ts
	case KindTrim:
		if len(rest) != 8 {
			return e, fmt.Errorf("trim entry with %d bytes after the id, not 8: %w", len(rest), ErrCorrupt)
		}
		e.Before = binary.LittleEndian.Uint64(rest)
	default:
		return e, fmt.Errorf("unknown entry kind %d: %w", e.Kind, ErrCorrupt)
	}
	return e, nil
}

// FileName is the name of entry log file number seq.
func FileName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, FileSuffix) }

// ParseFileName returns the number of an entry log file's name.
func ParseFileName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, FileSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v > 0
}

// CorruptionError names damage in an entry log file that Open will not cut.
type CorruptionError struct {
	File               string
	StartByte, EndByte int64 // [StartByte, EndByte) of the damaged range
	Tail               record.Tail
	Reason             string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%s bytes [%d,%d): %s: %v", e.File, e.StartByte, e.EndByte, e.Reason, ErrCorrupt)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
