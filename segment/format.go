package segment

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Segment header layout (little-endian), docs/format.md "Segment header".
const (
	HeaderSize    = 48
	FormatVersion = 1

	// MaxSegmentBytes bounds a segment's record block, before and after
	// compression, so that a damaged length can never ask for more.
	MaxSegmentBytes = 1 << 30

	codecMask = 0x03
)

var segMagic = [4]byte{'C', 'M', 'B', 'S'}

// header is a decoded segment header.
type header struct {
	codec     Codec
	base      uint64
	count     uint32
	rawLen    uint32 // record block bytes before compression
	tsMicros  int64
	storedLen uint32 // bytes after the header
	sum       uint64 // xxhash64 of header bytes 0..39 then the stored bytes
}

func (h header) size() int64  { return HeaderSize + int64(h.storedLen) }
func (h header) last() uint64 { return h.base + uint64(h.count) - 1 }

// putHeader writes h (all but the checksum) into b[:HeaderSize].
func putHeader(b []byte, h header) {
	_ = b[HeaderSize-1]
	copy(b, segMagic[:])
	b[4] = FormatVersion
	b[5] = byte(h.codec) & codecMask
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint64(b[8:], h.base)
	binary.LittleEndian.PutUint32(b[16:], h.count)
	binary.LittleEndian.PutUint32(b[20:], h.rawLen)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.tsMicros))
	binary.LittleEndian.PutUint32(b[32:], h.storedLen)
	binary.LittleEndian.PutUint32(b[36:], 0)
}

// checksum is xxhash64 over header bytes 0..39 followed by the stored bytes.
func checksum(hdr, stored []byte) uint64 {
	d := xxhash.New()
	_, _ = d.Write(hdr[:40])
	_, _ = d.Write(stored)
	return d.Sum64()
}

// parseHeader decodes b[:HeaderSize] and checks everything that can be
// checked without the stored bytes; the checksum is verified by verify.
func parseHeader(b []byte) (header, error) {
	if len(b) < HeaderSize {
		return header{}, fmt.Errorf("partial header (%d of %d bytes)", len(b), HeaderSize)
	}
	if [4]byte(b[:4]) != segMagic {
		return header{}, fmt.Errorf("bad magic %x", b[:4])
	}
	if b[4] != FormatVersion {
		return header{}, fmt.Errorf("unknown format version %d", b[4])
	}
	h := header{
		codec:     Codec(b[5] & codecMask),
		base:      binary.LittleEndian.Uint64(b[8:]),
		count:     binary.LittleEndian.Uint32(b[16:]),
		rawLen:    binary.LittleEndian.Uint32(b[20:]),
		tsMicros:  int64(binary.LittleEndian.Uint64(b[24:])),
		storedLen: binary.LittleEndian.Uint32(b[32:]),
		sum:       binary.LittleEndian.Uint64(b[40:]),
	}
	switch {
	case b[5]&^codecMask != 0 || b[6] != 0 || b[7] != 0 || binary.LittleEndian.Uint32(b[36:]) != 0:
		return h, fmt.Errorf("reserved header bits set")
	case h.codec > CodecZstd:
		return h, fmt.Errorf("unknown codec %d", h.codec)
	case h.count == 0 || h.base == 0 || h.base+uint64(h.count) < h.base:
		return h, fmt.Errorf("bad base offset %d / count %d", h.base, h.count)
	case h.rawLen > MaxSegmentBytes || h.storedLen > MaxSegmentBytes:
		return h, fmt.Errorf("segment length %d/%d above the %d limit", h.rawLen, h.storedLen, MaxSegmentBytes)
	case h.codec == CodecNone && h.rawLen != h.storedLen:
		return h, fmt.Errorf("uncompressed segment with raw %d != stored %d bytes", h.rawLen, h.storedLen)
	}
	return h, nil
}

// verify checks the checksum of a whole segment (header + stored bytes).
func verify(h header, seg []byte) error {
	if int64(len(seg)) < h.size() {
		return fmt.Errorf("short segment (%d of %d bytes)", len(seg), h.size())
	}
	if got := checksum(seg, seg[HeaderSize:h.size()]); got != h.sum {
		return fmt.Errorf("checksum mismatch (stored %016x, computed %016x)", h.sum, got)
	}
	return nil
}

// Record flags (the byte after the record length).
const (
	flagTrace = 1 << 0
	flagSub   = 1 << 1
	flagExtra = 1 << 2
)

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// recordBodyLen is the encoded size of r after its length prefix.
func recordBodyLen(r *Record) int {
	n := 1 + 16 + uvarintLen(uint64(len(r.TransactionID))) + len(r.TransactionID) +
		uvarintLen(uint64(len(r.Payload))) + len(r.Payload)
	if r.TraceID != "" {
		n += uvarintLen(uint64(len(r.TraceID))) + len(r.TraceID)
	}
	if r.ProducerSub != "" {
		n += uvarintLen(uint64(len(r.ProducerSub))) + len(r.ProducerSub)
	}
	if len(r.Extra) > 0 {
		n += uvarintLen(uint64(len(r.Extra))) + len(r.Extra)
	}
	return n
}

// appendRecord encodes r: uvarint body length, flags, id, then the fields.
func appendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendUvarint(dst, uint64(recordBodyLen(r)))
	var flags byte
	if r.TraceID != "" {
		flags |= flagTrace
	}
	if r.ProducerSub != "" {
		flags |= flagSub
	}
	if len(r.Extra) > 0 {
		flags |= flagExtra
	}
	dst = append(dst, flags)
	dst = append(dst, r.ID[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(r.TransactionID)))
	dst = append(dst, r.TransactionID...)
	if flags&flagTrace != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(r.TraceID)))
		dst = append(dst, r.TraceID...)
	}
	if flags&flagSub != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(r.ProducerSub)))
		dst = append(dst, r.ProducerSub...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
	dst = append(dst, r.Payload...)
	if flags&flagExtra != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(r.Extra)))
		dst = append(dst, r.Extra...)
	}
	return dst
}

// rawRecord is a decoded record whose fields are slices of the record block.
type rawRecord struct {
	id               [16]byte
	txid, trace, sub []byte
	payload, extra   []byte
}

// nextRecord decodes the record at the start of b and returns it and the
// bytes after it. Unknown flag bits and bytes after the known fields (inside
// the record's length) are ignored: they are how later versions add fields.
func nextRecord(b []byte) (rawRecord, []byte, error) {
	var r rawRecord
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return r, nil, fmt.Errorf("bad record length")
	}
	body, rest := b[k:k+int(n)], b[k+int(n):]
	if len(body) < 17 {
		return r, nil, fmt.Errorf("record shorter than flags and id")
	}
	flags := body[0]
	copy(r.id[:], body[1:17])
	p := body[17:]
	var err error
	field := func() []byte {
		if err != nil {
			return nil
		}
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			err = fmt.Errorf("bad field length")
			return nil
		}
		f := p[k : k+int(l) : k+int(l)]
		p = p[k+int(l):]
		return f
	}
	r.txid = field()
	if flags&flagTrace != 0 {
		r.trace = field()
	}
	if flags&flagSub != 0 {
		r.sub = field()
	}
	r.payload = field()
	if flags&flagExtra != 0 {
		r.extra = field()
	}
	return r, rest, err
}
