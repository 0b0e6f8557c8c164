package cursor

import (
	"encoding/binary"
	"fmt"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
)

// Format version 2 (see the package comment for the layout): every checkpoint
// and every piece of a snapshot is one frame of package record.
const formatVersion = 2

// The two record formats. A body is at most maxFrameBody bytes; the writer
// splits a larger checkpoint into several (each a complete checkpoint of its
// own) and a snapshot into pieces of about snapshotPieceBytes.
var (
	checkpointFormat = record.NewFormat("CCP2", maxFrameBody)
	snapshotFormat   = record.NewFormat("CSN2", maxFrameBody)
)

const (
	maxFrameBody = 1 << 30 // record's own limit
	// checkpointSplitBytes: the writer ends a checkpoint frame once its body
	// passes this and puts what is left in the next one (same generation).
	checkpointSplitBytes = 16 << 20
	// snapshotPieceBytes: a snapshot entries frame ends once its body passes this.
	snapshotPieceBytes = 1 << 20
	// seqLen is the checkpoint sequence number at the start of a checkpoint body.
	seqLen = 8
)

// Body entry tags (format 2; format 1 differs only in its record tags, see
// format_v1.go).
const (
	tagState      = 1
	tagSub        = 2
	tagRecord     = 3 // v2: id, bytes
	tagDropRecord = 4 // v2: id
)

// Snapshot frame kinds (the first byte of a snapshot frame's body).
const (
	snapHeader  = 1 // upTo u64 LE
	snapEntries = 2 // entries
	snapTrailer = 3 // entry frames u64 LE, entries u64 LE
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

// encoder builds frames in a reusable buffer. Group names are written once per
// frame and referred to by index afterwards, so every frame decodes on its own.
type encoder struct {
	f       record.Format
	buf     []byte
	start   int // where the open frame starts in buf
	groups  map[string]uint64
	entries int // entries in the open frame
}

func newEncoder(f record.Format) *encoder {
	return &encoder{f: f, groups: make(map[string]uint64)}
}

// reset drops every frame in the buffer.
func (c *encoder) reset() { c.buf = c.buf[:0] }

// begin opens a new frame after whatever the buffer holds.
func (c *encoder) begin() {
	c.buf, c.start = c.f.Begin(c.buf)
	clear(c.groups)
	c.entries = 0
}

// beginCheckpoint opens a checkpoint frame with sequence number seq.
func (c *encoder) beginCheckpoint(seq uint64) {
	c.begin()
	c.buf = binary.LittleEndian.AppendUint64(c.buf, seq)
}

// bodyLen is the length of the open frame's body so far.
func (c *encoder) bodyLen() int { return len(c.buf) - c.start - record.HeaderSize }

// finish closes the open frame. Errors: record.ErrTooLarge (a body over
// 1 GiB; the writer splits long before that, so only a bug gets here).
func (c *encoder) finish() error {
	b, err := c.f.Finish(c.buf, c.start)
	if err != nil {
		return err // the frame stays in buf (a failed checkpoint is requeued from it)
	}
	c.buf = b
	return nil
}

// frame returns the open frame's bytes (header and body).
func (c *encoder) frame() []byte { return c.buf[c.start:] }

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

func (c *encoder) record(id uint64, r []byte) {
	c.entries++
	c.buf = append(c.buf, tagRecord)
	c.buf = binary.AppendUvarint(c.buf, id)
	c.buf = binary.AppendUvarint(c.buf, uint64(len(r)))
	c.buf = append(c.buf, r...)
}

func (c *encoder) dropRecord(id uint64) {
	c.entries++
	c.buf = append(c.buf, tagDropRecord)
	c.buf = binary.AppendUvarint(c.buf, id)
}

// checkpointBody splits a verified checkpoint frame body into its sequence
// number and entries.
func checkpointBody(body []byte) (seq uint64, entries []byte, err error) {
	if len(body) < seqLen {
		return 0, nil, fmt.Errorf("checkpoint body of %d bytes has no sequence number", len(body))
	}
	return binary.LittleEndian.Uint64(body), body[seqLen:], nil
}

// visitor receives the entries of a body in order.
type visitor interface {
	state(k Key, s lease.State, deleted bool)
	sub(k subKey, s Subscription, deleted bool)
	record(id uint64, r []byte) // r aliases the body; copy to keep. Format 1: id 0
	dropRecord(id uint64)
	dropAllRecords() // format 1 only
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

// decodeEntries replays the entries of a body of the given format version
// (1 or 2) into v. It stops at the first malformed entry and returns an error;
// entries before it have been visited.
func decodeEntries(body []byte, version int, v visitor) error {
	r := &bodyReader{b: body}
	var groups []string
	for len(r.b) > 0 && r.err == nil {
		switch tag := r.byte1("tag"); {
		case tag == tagState:
			decodeState(r, &groups, v)
		case tag == tagSub:
			decodeSub(r, v)
		case tag == tagRecord && version == 1:
			rec := r.bytes(r.uvarint("record length"), "record")
			if r.err == nil {
				v.record(0, rec)
			}
		case tag == tagRecord:
			id := r.uvarint("record id")
			rec := r.bytes(r.uvarint("record length"), "record")
			if r.err == nil && id == 0 {
				r.fail("record id")
			}
			if r.err == nil {
				v.record(id, rec)
			}
		case tag == tagDropRecord && version == 1:
			v.dropAllRecords()
		case tag == tagDropRecord:
			id := r.uvarint("record id")
			if r.err == nil {
				v.dropRecord(id)
			}
		default:
			r.fail(fmt.Sprintf("tag %d", tag))
		}
	}
	return r.err
}

func decodeState(r *bodyReader, groups *[]string, v visitor) {
	var k Key
	copy(k.Partition[:], r.bytes(16, "partition"))
	gi := r.uvarint("group index")
	switch {
	case r.err != nil:
	case gi < uint64(len(*groups)):
		k.Group = (*groups)[gi]
	case gi == uint64(len(*groups)):
		k.Group = r.str("group")
		*groups = append(*groups, k.Group)
	default:
		r.fail("group index")
	}
	flags := r.byte1("flags")
	if flags&^stKnown != 0 || (flags&stDeleted != 0 && flags != stDeleted) {
		r.fail("flags")
	}
	if r.err != nil {
		return
	}
	if flags&stDeleted != 0 {
		v.state(k, lease.State{}, true)
		return
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
}

func decodeSub(r *bodyReader, v visitor) {
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
}
