package cursor

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/combmq/comb/lease"
)

// Frame layout (see the package comment for the diagram).
const (
	frameHeaderLen  = 32
	formatVersion   = 1
	kindCheckpoint  = 1
	kindSnapshot    = 2
	magicCheckpoint = "CCKP"
	magicSnapshot   = "CSNP"
	// maxBodyLen bounds a frame body so a damaged length field cannot make
	// recovery allocate absurdly; a snapshot of 100 M cursors is ~3 GiB.
	maxBodyLen = 1 << 36
)

// Body entry tags.
const (
	tagState       = 1
	tagSub         = 2
	tagRecord      = 3
	tagDropRecords = 4
)

// State entry flags.
const (
	stDeleted = 1 << iota
	stSpan    // lease Start, End, Attempts follow
	stLeaseID // lease ID follows
	stWorker  // worker id follows
	stExpiry  // lease expiry follows
	stKnown   = stDeleted | stSpan | stLeaseID | stWorker | stExpiry
)

// frameHeader is the decoded fixed part of a frame.
type frameHeader struct {
	kind    byte
	seq     uint64
	bodyLen uint64
}

// encoder builds one frame in a reusable buffer. Group names are written once
// per frame and referred to by index afterwards.
type encoder struct {
	buf     []byte
	groups  map[string]uint64
	entries int
}

func newEncoder() *encoder { return &encoder{groups: make(map[string]uint64)} }

func (c *encoder) begin(kind byte, seq uint64) {
	c.buf = append(c.buf[:0], make([]byte, frameHeaderLen)...)
	if kind == kindSnapshot {
		copy(c.buf, magicSnapshot)
	} else {
		copy(c.buf, magicCheckpoint)
	}
	c.buf[4] = formatVersion
	c.buf[5] = kind
	binary.LittleEndian.PutUint64(c.buf[8:], seq)
	clear(c.groups)
	c.entries = 0
}

func (c *encoder) str(s string) {
	c.buf = binary.AppendUvarint(c.buf, uint64(len(s)))
	c.buf = append(c.buf, s...)
}

// state appends the full State of k (or its deletion).
func (c *encoder) state(k Key, s lease.State, deleted bool) {
	c.entries++
	c.buf = append(c.buf, tagState)
	c.buf = append(c.buf, k.Partition[:]...)
	if gi, ok := c.groups[k.Group]; ok {
		c.buf = binary.AppendUvarint(c.buf, gi)
	} else {
		gi = uint64(len(c.groups))
		c.groups[k.Group] = gi
		c.buf = binary.AppendUvarint(c.buf, gi)
		c.str(k.Group)
	}
	if deleted {
		c.buf = append(c.buf, stDeleted)
		return
	}
	l := s.Lease
	var flags byte
	if l.Start != 0 || l.End != 0 || l.Attempts != 0 {
		flags |= stSpan
	}
	if l.Held() {
		flags |= stLeaseID
	}
	if l.WorkerID != "" {
		flags |= stWorker
	}
	if l.ExpiresAtMicros != 0 {
		flags |= stExpiry
	}
	c.buf = append(c.buf, flags)
	c.buf = binary.AppendUvarint(c.buf, s.Committed)
	c.buf = binary.AppendUvarint(c.buf, uint64(s.Retries))
	if flags&stSpan != 0 {
		c.buf = binary.AppendUvarint(c.buf, l.Start)
		c.buf = binary.AppendUvarint(c.buf, l.End)
		c.buf = binary.AppendUvarint(c.buf, uint64(l.Attempts))
	}
	if flags&stLeaseID != 0 {
		c.buf = append(c.buf, l.ID[:]...)
	}
	if flags&stWorker != 0 {
		c.str(l.WorkerID)
	}
	if flags&stExpiry != 0 {
		c.buf = binary.AppendVarint(c.buf, l.ExpiresAtMicros)
	}
}

func (c *encoder) sub(k subKey, s Subscription, deleted bool) {
	c.entries++
	c.buf = append(c.buf, tagSub)
	c.str(k.queue)
	c.str(k.group)
	if deleted {
		c.buf = append(c.buf, 1)
		return
	}
	c.buf = append(c.buf, 0, byte(s.Mode))
	c.buf = binary.AppendVarint(c.buf, s.TimestampMicros)
	c.buf = binary.AppendVarint(c.buf, s.CreatedAtMicros)
}

func (c *encoder) record(r []byte) {
	c.entries++
	c.buf = append(c.buf, tagRecord)
	c.buf = binary.AppendUvarint(c.buf, uint64(len(r)))
	c.buf = append(c.buf, r...)
}

func (c *encoder) dropRecords() {
	c.entries++
	c.buf = append(c.buf, tagDropRecords)
}

// finish fills in the body length and checksum and returns the whole frame.
func (c *encoder) finish() []byte {
	binary.LittleEndian.PutUint64(c.buf[16:], uint64(len(c.buf)-frameHeaderLen))
	binary.LittleEndian.PutUint64(c.buf[24:], frameChecksum(c.buf[:24], c.buf[frameHeaderLen:]))
	return c.buf
}

func frameChecksum(head, body []byte) uint64 {
	d := xxhash.New()
	_, _ = d.Write(head)
	_, _ = d.Write(body)
	return d.Sum64()
}

// decodeFrame checks the frame at the start of b and returns its header, body
// and total length. errShort means b ends inside the frame; any other error
// means the bytes are not a valid frame of the wanted kind.
func decodeFrame(b []byte, wantKind byte) (frameHeader, []byte, int, error) {
	if len(b) < frameHeaderLen {
		return frameHeader{}, nil, 0, errShort
	}
	magic := magicCheckpoint
	if wantKind == kindSnapshot {
		magic = magicSnapshot
	}
	if string(b[:4]) != magic {
		return frameHeader{}, nil, 0, fmt.Errorf("bad magic %q", b[:4])
	}
	if b[4] != formatVersion || b[5] != wantKind {
		return frameHeader{}, nil, 0, fmt.Errorf("unknown version %d or kind %d", b[4], b[5])
	}
	h := frameHeader{kind: b[5], seq: binary.LittleEndian.Uint64(b[8:]), bodyLen: binary.LittleEndian.Uint64(b[16:])}
	if h.bodyLen > maxBodyLen {
		return frameHeader{}, nil, 0, fmt.Errorf("body length %d too large", h.bodyLen)
	}
	if uint64(len(b)-frameHeaderLen) < h.bodyLen {
		return frameHeader{}, nil, 0, errShort
	}
	n := frameHeaderLen + int(h.bodyLen)
	body := b[frameHeaderLen:n]
	if sum := binary.LittleEndian.Uint64(b[24:]); sum != frameChecksum(b[:24], body) {
		return frameHeader{}, nil, 0, fmt.Errorf("checksum mismatch")
	}
	return h, body, n, nil
}

// visitor receives the entries of a body in order.
type visitor interface {
	state(k Key, s lease.State, deleted bool)
	sub(k subKey, s Subscription, deleted bool)
	record(r []byte) // r aliases the body; copy to keep
	dropRecords()
}

// bodyReader walks a body; every read checks bounds so damaged input gives
// an error, never a panic.
type bodyReader struct {
	b   []byte
	err error
}

func (r *bodyReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("body: bad %s", what)
	}
}

func (r *bodyReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *bodyReader) varint(what string) int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *bodyReader) bytes(n uint64, what string) []byte {
	if n > uint64(len(r.b)) {
		r.fail(what)
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *bodyReader) byte1(what string) byte {
	if len(r.b) == 0 {
		r.fail(what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *bodyReader) str(what string) string { return string(r.bytes(r.uvarint(what), what)) }

func (r *bodyReader) u32(what string) uint32 {
	v := r.uvarint(what)
	if v > 1<<32-1 {
		r.fail(what)
	}
	return uint32(v)
}

// decodeBody replays a frame body into v. It stops at the first malformed
// entry and returns an error; entries before it have been visited.
func decodeBody(body []byte, v visitor) error {
	r := &bodyReader{b: body}
	var groups []string
	for len(r.b) > 0 && r.err == nil {
		switch tag := r.byte1("tag"); tag {
		case tagState:
			var k Key
			copy(k.Partition[:], r.bytes(16, "partition"))
			gi := r.uvarint("group index")
			switch {
			case r.err != nil:
			case gi < uint64(len(groups)):
				k.Group = groups[gi]
			case gi == uint64(len(groups)):
				k.Group = r.str("group")
				groups = append(groups, k.Group)
			default:
				r.fail("group index")
			}
			flags := r.byte1("flags")
			if flags&^stKnown != 0 || (flags&stDeleted != 0 && flags != stDeleted) {
				r.fail("flags")
			}
			if r.err != nil {
				break
			}
			if flags&stDeleted != 0 {
				v.state(k, lease.State{}, true)
				continue
			}
			var s lease.State
			s.Committed = r.uvarint("committed")
			s.Retries = r.u32("retries")
			if flags&stSpan != 0 {
				s.Lease.Start = r.uvarint("start")
				s.Lease.End = r.uvarint("end")
				s.Lease.Attempts = r.u32("attempts")
			}
			if flags&stLeaseID != 0 {
				copy(s.Lease.ID[:], r.bytes(16, "lease id"))
				if !s.Lease.Held() {
					r.fail("lease id")
				}
			}
			if flags&stWorker != 0 {
				s.Lease.WorkerID = r.str("worker")
			}
			if flags&stExpiry != 0 {
				s.Lease.ExpiresAtMicros = r.varint("expiry")
			}
			if r.err == nil {
				v.state(k, s, false)
			}
		case tagSub:
			k := subKey{queue: r.str("queue")}
			k.group = r.str("group")
			switch r.byte1("sub flags") {
			case 1:
				if r.err == nil {
					v.sub(k, Subscription{}, true)
				}
			case 0:
				var s Subscription
				s.Mode = SubMode(r.byte1("mode"))
				if s.Mode > SubTimestamp {
					r.fail("mode")
				}
				s.TimestampMicros = r.varint("timestamp")
				s.CreatedAtMicros = r.varint("createdAt")
				if r.err == nil {
					v.sub(k, s, false)
				}
			default:
				r.fail("sub flags")
			}
		case tagRecord:
			rec := r.bytes(r.uvarint("record length"), "record")
			if r.err == nil {
				v.record(rec)
			}
		case tagDropRecords:
			v.dropRecords()
		default:
			r.fail(fmt.Sprintf("tag %d", tag))
		}
	}
	return r.err
}
