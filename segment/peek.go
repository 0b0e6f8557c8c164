package segment

import "fmt"

// PeekSegment reads the header of one whole segment as AppendTo returned it
// (a commit-log entry): its base offset, record count and timestamp (µs). It
// checks the header's rules and that seg holds exactly the segment, not the
// checksum (AppendSegment does).
//
// Errors: ErrCorrupt (wrapped) for a header that does not parse or a length
// that does not match.
func PeekSegment(seg []byte) (base uint64, count uint32, tsMicros int64, err error) {
	h, err := parseHeader(seg)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if int64(len(seg)) != h.size() {
		return 0, 0, 0, fmt.Errorf("segment at offset %d: %d bytes for a segment of %d: %w", h.base, len(seg), h.size(), ErrCorrupt)
	}
	return h.base, h.count, h.tsMicros, nil
}
