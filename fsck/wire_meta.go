package fsck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
)

// readMeta reads the broker's metadata journal (<data>/meta/journal) read-only.
// A variable so tests can name partitions without a journal.
//
// Stopgap until broker exports a read-only reader (request 3 in /work/contracts.md):
// this decodes the journal as broker/doc.go and broker/meta_format.go define it
// (frame: u32 body length, u64 xxhash64 of the body, body; body: kind byte, 16-byte
// id, then for kind 1 queue put: varint createdAt, name, namespace, task, options;
// kind 2 partition create: queue id, varint createdAt, name; kind 3 queue delete).
// Only what fsck needs is kept: names. TestMetaReaderMatchesBroker writes a journal
// through the real broker and reads it back here, so a format change fails CI.
var readMeta = readMetaJournal

const (
	metaJournalFile = "journal"
	metaFrameHeader = 12
	metaMaxBody     = 1 << 20 // the broker's own bound: a larger length is damage
	metaQueuePut    = 1
	metaPartCreate  = 2
	metaQueueDelete = 3
	// metaResyncLimit bounds the search for a valid frame after damage.
	metaResyncLimit = 16 << 20
)

func readMetaJournal(dataDir string) (*metaView, error) {
	rel := filepath.Join(dirMeta, metaJournalFile)
	b, err := os.ReadFile(filepath.Join(dataDir, rel))
	if errors.Is(err, os.ErrNotExist) {
		return &metaView{Queues: map[[16]byte]string{}, Partitions: map[[16]byte]partInfo{}}, nil
	}
	if err != nil {
		return nil, err
	}
	v := &metaView{Present: true, File: rel, Bytes: int64(len(b)), Queues: map[[16]byte]string{}, Partitions: map[[16]byte]partInfo{}}
	pos := 0
	for pos < len(b) {
		body, n, ok := metaFrame(b[pos:])
		if !ok || applyMetaRecord(v, body) != nil {
			break
		}
		pos += n
	}
	v.ValidBytes = int64(pos)
	if pos < len(b) {
		end := min(len(b), pos+metaResyncLimit)
		for p := pos + 1; p < end; p++ {
			if body, _, ok := metaFrame(b[p:]); ok && applyMetaRecord(&metaView{Queues: map[[16]byte]string{}, Partitions: map[[16]byte]partInfo{}}, body) == nil {
				v.MidFile = true
				break
			}
		}
	}
	for id, p := range v.Partitions {
		p.Queue = v.Queues[p.QueueID]
		v.Partitions[id] = p
	}
	return v, nil
}

// metaFrame returns the body of the frame at the start of b and the frame's length.
func metaFrame(b []byte) (body []byte, n int, ok bool) {
	if len(b) < metaFrameHeader {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if size == 0 || size > metaMaxBody || uint64(len(b)-metaFrameHeader) < uint64(size) {
		return nil, 0, false
	}
	body = b[metaFrameHeader : metaFrameHeader+int(size)]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(b[4:]) {
		return nil, 0, false
	}
	return body, metaFrameHeader + int(size), true
}

var errMetaRecord = errors.New("metadata record does not decode")

// applyMetaRecord applies one record body to v (names only).
func applyMetaRecord(v *metaView, body []byte) error {
	if len(body) < 17 {
		return errMetaRecord
	}
	kind, id, rest := body[0], [16]byte(body[1:17]), body[17:]
	switch kind {
	case metaQueuePut:
		if _, n := binary.Varint(rest); n > 0 {
			name, _, err := metaString(rest[n:])
			if err != nil {
				return err
			}
			v.Queues[id] = name
			return nil
		}
		return errMetaRecord
	case metaPartCreate:
		if len(rest) < 16 {
			return errMetaRecord
		}
		qid := [16]byte(rest[:16])
		_, n := binary.Varint(rest[16:])
		if n <= 0 {
			return errMetaRecord
		}
		name, _, err := metaString(rest[16+n:])
		if err != nil {
			return err
		}
		v.Partitions[id] = partInfo{ID: id, QueueID: qid, Name: name}
		return nil
	case metaQueueDelete:
		delete(v.Queues, id)
		for pid, p := range v.Partitions {
			if p.QueueID == id {
				delete(v.Partitions, pid)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: kind %d", errMetaRecord, kind)
}

func metaString(b []byte) (string, []byte, error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return "", nil, errMetaRecord
	}
	return string(b[n : n+int(l)]), b[n+int(l):], nil
}
