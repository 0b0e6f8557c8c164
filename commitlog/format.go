package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/record"
)

// LSN numbers the log's entries from 1 (package lsn's type, shared with
// the replicated log, the cursor engine and the broker).
type LSN = lsn.LSN

const (
	headerVersion = 1
	headerBody    = 1 + 8 + 8
	// batchHead is the bytes of a batch body before its entries.
	batchHead = 8 + 4
	// frameOverhead is what a batch frame adds around its entries.
	frameOverhead = record.HeaderSize + batchHead
	// MaxEntry is the largest entry payload, in bytes (a push body is at
	// most 64 MiB by default).
	MaxEntry = 256 << 20
	maxBatch = 1 << 30
)

var (
	headerFormat = record.NewFormat("CMWH", 64)
	batchFormat  = record.NewFormat("CMWB", maxBatch)
)

// Errors.
var (
	// ErrCorrupt is wrapped by Open for damage that is not a torn tail:
	// nothing is changed and the log does not open.
	ErrCorrupt = errors.New("commitlog: damaged")
	// ErrShortFile is wrapped (with ErrCorrupt) by Open and reported by
	// Inspect for a newest file shorter than its preallocation: a batch that
	// runs past the end of the file, or a file that ends right after a
	// batch with no zero byte after it (tailGuard). Preallocation is synced
	// before any batch goes into it, so no crash leaves that: the file was
	// cut, and the batches it held past the cut were acknowledged.
	ErrShortFile = errors.New("shorter than its preallocation")
	// ErrFailed is returned by every call after a failed write or
	// fdatasync; a restart verifies the files again.
	ErrFailed = errors.New("commitlog: failed; restart to verify it")
	// ErrNoSpace is returned by Append when no file can be prepared for the
	// entry (the disk is full): nothing was appended, the call can be
	// retried once space is freed.
	ErrNoSpace = errors.New("commitlog: no space for the entry")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("commitlog: closed")
	// ErrTooLarge is returned by Append for an entry over MaxEntry bytes.
	ErrTooLarge = errors.New("commitlog: entry over MaxEntry")
)

// fileHeader is the header frame of a file. A file's first LSN is its name:
// files are prepared ahead, before anyone knows which LSN will go first.
type fileHeader struct {
	salt      uint64
	createdUs int64
}

func (h fileHeader) encode() []byte {
	b := []byte{headerVersion}
	b = binary.LittleEndian.AppendUint64(b, h.salt)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.createdUs))
	f, _ := headerFormat.Append(nil, b)
	return f
}

// decodeHeader reads the header frame at the start of b and returns it and
// its length.
func decodeHeader(b []byte) (fileHeader, int, error) {
	body, n, err := headerFormat.Next(b)
	if err != nil {
		return fileHeader{}, 0, err
	}
	if len(body) != headerBody || body[0] != headerVersion {
		return fileHeader{}, 0, fmt.Errorf("%w: header version %d, %d bytes", record.ErrHeader, body[0], len(body))
	}
	return fileHeader{
		salt:      binary.LittleEndian.Uint64(body[1:]),
		createdUs: int64(binary.LittleEndian.Uint64(body[9:])),
	}, n, nil
}

// Entry is one entry of the log. Payload aliases a read buffer: valid only
// during the callback that receives it.
type Entry struct {
	LSN     LSN
	Kind    byte
	Payload []byte
}

// appendEntry appends kind and payload as one entry of a batch body.
func appendEntry(b []byte, kind byte, payload []byte) []byte {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// entrySize is the bytes appendEntry adds.
func entrySize(payload []byte) int {
	var tmp [binary.MaxVarintLen64]byte
	return 1 + binary.PutUvarint(tmp[:], uint64(len(payload))) + len(payload)
}

// eachEntry decodes a batch body, calling fn for every entry in order.
//
// Errors: record.ErrFields for a body that does not decode (its frame
// verified, so a bug or a newer format), or fn's error.
func eachEntry(body []byte, fn func(Entry) error) (first LSN, count int, err error) {
	if len(body) < batchHead {
		return 0, 0, record.ErrFields
	}
	first = LSN(binary.LittleEndian.Uint64(body))
	count = int(binary.LittleEndian.Uint32(body[8:]))
	d := record.Fields{B: body[batchHead:]}
	for i := 0; i < count; i++ {
		kind := d.Byte()
		payload := d.Bytes()
		if d.Err != nil {
			return first, count, d.Err
		}
		if fn != nil {
			if err := fn(Entry{LSN: first + LSN(i), Kind: kind, Payload: payload}); err != nil {
				return first, count, err
			}
		}
	}
	if err := d.End(); err != nil || count == 0 {
		return first, count, record.ErrFields
	}
	return first, count, nil
}

// putBatchHead writes a batch body's head: first LSN and entry count.
func putBatchHead(body []byte, first LSN, count int) {
	binary.LittleEndian.PutUint64(body, uint64(first))
	binary.LittleEndian.PutUint32(body[8:], uint32(count))
}
