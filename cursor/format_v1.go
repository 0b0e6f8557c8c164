package cursor

import (
	"encoding/binary"
	"errors"
	"fmt"

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

func v1JournalName(seq uint64) string  { return fmt.Sprintf("journal-%016x.log", seq) }
func v1SnapshotName(seq uint64) string { return fmt.Sprintf("snapshot-%016x.snap", seq) }

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
