package meta

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/combmq/comb/vfs"
)

// Version 1 journals (comb before issue 10) framed records as
//
//	u32 body length | u64 xxhash64(body) | body
//
// with the bodies this package still decodes. They are read once, rewritten
// in the current format and kept as journal.v1.
const (
	legacyHeader  = 12
	legacyMaxBody = 1 << 20
	legacySuffix  = ".v1"
)

// isLegacy reports whether data is a version 1 journal: it does not start
// with the current magic and its first frame verifies as a version 1 frame.
// (A current journal whose first frame is damaged is not mistaken for one:
// its first bytes do not verify as anything.)
func isLegacy(data []byte) bool {
	if len(data) == 0 || bytes.HasPrefix(data, JournalFormat.Magic[:]) {
		return false
	}
	_, _, ok := legacyFrameAt(data)
	return ok
}

func legacyFrameAt(b []byte) (body []byte, n int, ok bool) {
	if len(b) < legacyHeader {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if size == 0 || size > legacyMaxBody || uint64(len(b)-legacyHeader) < uint64(size) {
		return nil, 0, false
	}
	body = b[legacyHeader : legacyHeader+int(size)]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(b[4:]) {
		return nil, 0, false
	}
	return body, legacyHeader + int(size), true
}

// upgradeLegacy rewrites the version 1 journal at path in the current format
// and returns the new bytes. Its valid prefix is converted; damage after it
// is left in journal.v1 (kept whole) and refused when valid frames follow
// it, as the current format would be. Crash-safe: journal.v1 is written
// (synced) first, then the new journal replaces the old one atomically.
//
// Errors: ErrCorrupt for mid-file damage or a body that does not decode;
// ErrRecordTooLarge for a record the current format refuses; file system
// errors, wrapped with the path.
func upgradeLegacy(fsys vfs.FS, path string, data []byte, noSync bool) ([]byte, error) {
	var recs []Record
	pos := 0
	for pos < len(data) {
		body, n, ok := legacyFrameAt(data[pos:])
		if !ok {
			break
		}
		r, err := decodeRecord(body)
		if err != nil {
			return nil, fmt.Errorf("metadata journal %s (version 1): the record at byte %d does not decode: %v: %w", path, pos, err, ErrCorrupt)
		}
		recs = append(recs, r)
		pos += n
	}
	for p := pos + 1; p < len(data); p++ {
		if _, _, ok := legacyFrameAt(data[p:]); ok {
			return nil, fmt.Errorf("metadata journal %s (version 1): bytes [%d,%d) are damaged and valid records follow them: %w", path, pos, p, ErrCorrupt)
		}
	}
	var out []byte
	for i := range recs {
		var err error
		if out, err = recs[i].appendFrame(out); err != nil {
			return nil, fmt.Errorf("metadata journal %s (version 1): record %d cannot be carried over: %w", path, i, err)
		}
	}
	if err := vfs.WriteFileAtomic(fsys, path+legacySuffix, data, noSync); err != nil {
		return nil, fmt.Errorf("metadata journal: keep the version 1 journal: %w", err)
	}
	if err := vfs.WriteFileAtomic(fsys, path, out, noSync); err != nil {
		return nil, fmt.Errorf("metadata journal: upgrade: %w", err)
	}
	return out, nil
}
