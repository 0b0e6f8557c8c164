package entrylog

import (
	"fmt"

	"github.com/combmq/comb/record"
)

// verdict is what scanning one file found (Open acts on it, Check reports it).
type verdict struct {
	size   int64
	hdr    fileHeader
	hdrErr error // the header does not parse (the frames were not read)
	// end is where the verified frames stop (absolute); tail, dataEnd and
	// resync are record.Scan's, made absolute.
	end, dataEnd, resync int64
	tail                 record.Tail
	frames               int
	// bad is a verified frame that does not decode (a bug or a newer
	// format; never a torn write).
	bad error
}

// scanFile reads the frames of data (a whole file numbered seq), passing
// each decoded entry and its frame's position and size to fn.
func scanFile(data []byte, seq uint64, fn func(pos int64, size int32, e *Entry)) verdict {
	v := verdict{size: int64(len(data)), resync: -1}
	v.hdr, v.hdrErr = parseHeader(data, seq)
	if v.hdrErr != nil {
		return v
	}
	f := frameFormat(v.hdr.seed)
	s, err := f.Scan(data[HeaderSize:], func(pos int64, body []byte) error {
		e, err := DecodeEntry(body)
		if err != nil {
			return fmt.Errorf("frame at byte %d: %w", pos+HeaderSize, err)
		}
		if fn != nil {
			fn(pos+HeaderSize, int32(record.HeaderSize+len(body)), &e)
		}
		return nil
	})
	v.bad = err
	v.end, v.dataEnd, v.tail, v.frames = s.End+HeaderSize, s.DataEnd+HeaderSize, s.Tail, s.Frames
	if s.Resync >= 0 {
		v.resync = s.Resync + HeaderSize
	}
	return v
}

// damage returns the CorruptionError v's file holds that Open must not cut
// (nil when what follows its verified frames may be cut): a frame that does
// not decode, a file shorter than its synced length, or damage below the
// synced length. Past it anything may be cut, verified frames after damage
// included: a power cut keeps any subset of the unsynced pages.
func (v *verdict) damage(name string) *CorruptionError {
	switch {
	case v.bad != nil:
		return &CorruptionError{File: name, StartByte: v.end, EndByte: v.dataEnd, Tail: record.TailDamaged,
			Reason: "a frame that verifies but does not decode: " + v.bad.Error()}
	case v.size < v.hdr.synced:
		return &CorruptionError{File: name, StartByte: v.size, EndByte: v.hdr.synced, Tail: record.TailTorn,
			Reason: fmt.Sprintf("the file is %d bytes, shorter than its synced length %d", v.size, v.hdr.synced)}
	case v.end < v.hdr.synced && v.tail == record.TailCorrupt:
		return &CorruptionError{File: name, StartByte: v.end, EndByte: v.resync, Tail: record.TailCorrupt,
			Reason: fmt.Sprintf("damaged frames below the synced length %d with a verified frame after them (at byte %d)", v.hdr.synced, v.resync)}
	case v.end < v.hdr.synced && v.tail != record.TailClean:
		return &CorruptionError{File: name, StartByte: v.end, EndByte: v.dataEnd, Tail: v.tail,
			Reason: fmt.Sprintf("%s bytes below the synced length %d", v.tail, v.hdr.synced)}
	}
	return nil
}

// creationCut reports whether a file whose header does not parse is the
// remains of a creation a crash cut short (the newest file, shorter than a
// header or with a header of zeros: nothing in it was ever synced), which
// Open removes after keeping its bytes.
func creationCut(data []byte, newest bool) bool {
	if !newest {
		return false
	}
	if len(data) < HeaderSize {
		return true
	}
	for _, c := range data[:32] {
		if c != 0 {
			return false
		}
	}
	return true
}
