package segment

import "fmt"

// DecodeSegment verifies one whole segment as AppendTo returned it (a
// commit-log entry: header rules, exact length, checksum) and decodes its
// records into buf, for offline readers of a commit log (comb dump and
// replay). The messages alias buf as Read's do: valid until buf is reused or
// Reset. The SegmentInfo's File and Pos are zero (the segment is in no file).
//
// Errors: ErrCorrupt (wrapped) for a segment that does not verify or whose
// records do not decode. Never panics on any input.
func DecodeSegment(seg []byte, buf *ReadBuffer) (SegmentInfo, []Message, error) {
	base, count, ts, err := PeekSegment(seg)
	if err != nil {
		return SegmentInfo{}, nil, err
	}
	h, _ := parseHeader(seg) // PeekSegment checked it
	if err := verify(h, seg); err != nil {
		return SegmentInfo{}, nil, fmt.Errorf("segment at offset %d: %v: %w", base, err, ErrCorrupt)
	}
	buf.Reset()
	if err := buf.decodeAll(h, seg); err != nil {
		return SegmentInfo{}, nil, fmt.Errorf("segment at offset %d: %v: %w", base, err, ErrCorrupt)
	}
	info := SegmentInfo{Bytes: h.size(), FirstOffset: base, Count: count, TimestampMicros: ts, Codec: h.codec}
	return info, buf.msgs, nil
}
