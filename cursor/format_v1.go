package cursor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
)

// Format version 1, read only: a directory written before format 2 is read
// with this decoder once, at Open, and upgraded (upgrade.go).
//
//	0      4     5     6        8                16               24               32
//	+------+-----+-----+--------+----------------+----------------+----------------+-----------+
//	| magic| ver | kind| unused |  seq (u64 LE)  | body len (u64) | xxhash64 (u64) | body ...  |
//	+------+-----+-----+--------+----------------+----------------+----------------+-----------+
//	magic "CCKP" (checkpoint) or "CSNP" (snapshot); ver 1; kind 1 = checkpoint, 2 = snapshot;
//	the checksum covers header bytes 0..23 and the body.
//
// The body entries are those of format 2 except the records: tag 3 is a
// record without an id (length, bytes), tag 4 forgets every earlier record.
const (
	v1HeaderLen      = 32
	v1Version        = 1
	v1KindCheckpoint = 1
	v1KindSnapshot   = 2
	v1MaxBodyLen     = 1 << 36
)

// errV1Short: a buffer ends inside a format 1 frame.
var errV1Short = errors.New("truncated")

// decodeV1Frame checks the format 1 frame at the start of b and returns its
// sequence number, body and total length. errV1Short means b ends inside the
// frame; any other error means the bytes are not a valid frame of the kind.
func decodeV1Frame(b []byte, wantKind byte) (seq uint64, body []byte, n int, err error) {
	if len(b) < v1HeaderLen {
		return 0, nil, 0, errV1Short
	}
	magic := "CCKP"
	if wantKind == v1KindSnapshot {
		magic = "CSNP"
	}
	if string(b[:4]) != magic {
		return 0, nil, 0, fmt.Errorf("bad magic %q", b[:4])
	}
	if b[4] != v1Version || b[5] != wantKind {
		return 0, nil, 0, fmt.Errorf("unknown version %d or kind %d", b[4], b[5])
	}
	seq = binary.LittleEndian.Uint64(b[8:])
	bodyLen := binary.LittleEndian.Uint64(b[16:])
	if bodyLen > v1MaxBodyLen {
		return 0, nil, 0, fmt.Errorf("body length %d too large", bodyLen)
	}
	if uint64(len(b)-v1HeaderLen) < bodyLen {
		return 0, nil, 0, errV1Short
	}
	n = v1HeaderLen + int(bodyLen)
	body = b[v1HeaderLen:n]
	d := xxhash.New()
	_, _ = d.Write(b[:24])
	_, _ = d.Write(body)
	if binary.LittleEndian.Uint64(b[24:]) != d.Sum64() {
		return 0, nil, 0, fmt.Errorf("checksum mismatch")
	}
	return seq, body, n, nil
}

// readV1 loads a format 1 directory into the engine's maps and rv's records,
// read only, with the rules of format 1: the newest snapshot, then every later
// checkpoint; the first all-zero header ends a journal; a torn or corrupt last
// checkpoint of the newest journal (no valid checkpoint after it) was never
// acknowledged and is skipped; any other damage is a *CorruptionError. It
// returns the last checkpoint's sequence number.
func (e *Engine) readV1(files dirFiles, rv *legacyReader) (uint64, error) {
	var last uint64
	haveBase := false
	if n := len(files.v1snapshots); n > 0 {
		sf := files.v1snapshots[n-1]
		path := filepath.Join(e.dir, sf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor snapshot: %w", err)
		}
		_, body, n, err := decodeV1Frame(b, v1KindSnapshot)
		if err == nil && n != len(b) {
			err = fmt.Errorf("%d bytes after the frame", len(b)-n)
		}
		if err == nil {
			err = decodeEntries(body, 1, rv)
		}
		if err != nil {
			return 0, &CorruptionError{File: path, EndByte: int64(len(b)), Reason: "format 1 snapshot: " + err.Error()}
		}
		last, haveBase = sf.seq, true
	}
	for i, jf := range files.v1journals {
		isLast := i == len(files.v1journals)-1
		path := filepath.Join(e.dir, jf.name)
		b, err := e.fs.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("cursor format 1 checkpoints: %w", err)
		}
		for pos := 0; pos < len(b); {
			if nonZeroLen(b[pos:min(len(b), pos+v1HeaderLen)]) == 0 {
				// The end of the journal: preallocated zeros, or a checkpoint
				// whose first bytes never reached the disk.
				if tail := nonZeroLen(b[pos:]); tail > 0 && (!isLast || validV1FrameAfter(b[pos:])) {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + tail), AfterSeq: last, Reason: "non-zero bytes after the end of the journal"}
				}
				break
			}
			seq, body, n, ferr := decodeV1Frame(b[pos:], v1KindCheckpoint)
			if ferr == nil && haveBase && seq > last && seq != last+1 {
				ferr = fmt.Errorf("checkpoint %d follows %d", seq, last)
			}
			if ferr == nil && (seq > last || !haveBase) {
				if berr := decodeEntries(body, 1, rv); berr != nil {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(pos + n), AfterSeq: last, Reason: berr.Error()}
				}
				last, haveBase = seq, true
			}
			if ferr != nil {
				if !isLast || validV1FrameAfter(b[pos+1:]) {
					return 0, &CorruptionError{File: path, StartByte: int64(pos), EndByte: int64(len(b)), AfterSeq: last, Reason: ferr.Error()}
				}
				break // a torn or corrupt final checkpoint: never acknowledged
			}
			pos += n
		}
	}
	return last, nil
}

// nonZeroLen is the length of b up to and including its last non-zero byte
// (0 when b is all zeros).
func nonZeroLen(b []byte) int {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return len(b)
}

// validV1FrameAfter reports whether a valid format 1 checkpoint starts anywhere
// in b: damage followed by good data is not a torn tail.
func validV1FrameAfter(b []byte) bool {
	magic := []byte("CCKP")
	for {
		i := bytes.Index(b, magic)
		if i < 0 {
			return false
		}
		if _, _, _, err := decodeV1Frame(b[i:], v1KindCheckpoint); err == nil {
			return true
		}
		b = b[i+1:]
	}
}
