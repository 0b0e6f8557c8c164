package cursor

import (
	"encoding/binary"
	"fmt"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
)

// Format version 3 (see the package comment for the layout): the directory
// holds snapshots only, each piece of a snapshot one frame of package record;
// checkpoints are bodies handed to the commit log (Options.Log), which frames
// and checksums them itself.
const formatVersion = 3

// snapshotFormat frames every piece of a format 3 snapshot. A body is at most
// maxFrameBody bytes (record's own limit).
var snapshotFormat = record.NewFormat("CSN3", maxFrameBody)

const (
	maxFrameBody = 1 << 30
	// checkpointSplitBytes: the writer ends a checkpoint body once it passes
	// this and puts what is left in the next one (same generation), well
	// under the commit log's largest entry (256 MiB).
	checkpointSplitBytes = 16 << 20
	// snapshotPieceBytes: a snapshot entries frame ends once its body passes this.
	snapshotPieceBytes = 1 << 20
)

// Body entry tags. Format 3 bodies hold states and subscriptions only; the
// record tags are read from format 1 and 2 files by the upgrade (format_v1.go,
// format_v2.go).
const (
	tagState      = 1
	tagSub        = 2
	tagRecord     = 3 // formats 1 and 2: an opaque redo record (format 2: with an id)
	tagDropRecord = 4 // format 1: forget every record; format 2: forget one id
)

// Snapshot frame kinds (the first byte of a snapshot frame's body).
const (
	snapHeader  = 1 // format 3: the kind byte only (format 2: upTo u64 LE)
	snapEntries = 2 // entries
	snapTrailer = 3 // format 3: entry frames u64, entries u64, legacy records u64, replayFrom u64 (LE)
	snapLegacy  = 4 // format 3: one redo record of a format 1 or 2 directory (opaque bytes)
)

// trailerLen is the body length of a format 3 trailer frame.
const trailerLen = 1 + 4*8

// State entry flags.
const (
	stDeleted = 1 << iota
	stSpan    // lease Start, End, Attempts follow
	stLeaseID // lease ID follows
	stWorker  // worker id follows
	stExpiry  // lease expiry follows
	stKnown   = stDeleted | stSpan | stLeaseID | stWorker | stExpiry
)

// encoder builds bodies in a reusable buffer: checkpoint bodies as they are
// (f == nil: the commit log frames them), snapshot pieces as frames of f.
// Group names are written once per body and referred to by index afterwards,
// so every body decodes on its own.
type encoder struct {
	f       *record.Format
	buf     []byte
	start   int // where the open body (with f: its frame) starts in buf
	groups  map[string]uint64
	entries int // entries in the open body
}

func newEncoder(f *record.Format) *encoder {
	return &encoder{f: f, groups: make(map[string]uint64)}
}

// reset drops everything in the buffer.
func (c *encoder) reset() { c.buf, c.start = c.buf[:0], 0 }

// begin opens a new body after whatever the buffer holds.
func (c *encoder) begin() {
	if c.f != nil {
		c.buf, c.start = c.f.Begin(c.buf)
	} else {
		c.start = len(c.buf)
	}
	clear(c.groups)
	c.entries = 0
}

// Checkpoint body versions (the first byte of a checkpoint). Version 3 is
// the version byte then entries; version 4 (written since issue 22) puts the
// writer's clock between them: varint µs since the Unix epoch, read when the
// body's collection began. A node that applies a checkpoint another node
// wrote (ApplyCommitted) rebases every lease expiry of a version 4 body on
// its own clock: expiresAt - clock is the lease's remaining duration (at
// least: the states were read after the clock), counted again from when it
// applies the body, so its expiry is never earlier than the writer's, whatever
// the two clocks read. Both versions are read.
const (
	checkpointV3      = 3
	checkpointVersion = 4
)

// beginCheckpoint opens a checkpoint body: its version byte and the
// writer's clock (µs), then entries.
func (c *encoder) beginCheckpoint(clockMicros int64) {
	c.begin()
	c.buf = append(c.buf, checkpointVersion)
	c.buf = binary.AppendVarint(c.buf, clockMicros)
}

func (c *encoder) headerLen() int {
	if c.f != nil {
		return record.HeaderSize
	}
	return 0
}

// bodyLen is the length of the open body so far.
func (c *encoder) bodyLen() int { return len(c.buf) - c.start - c.headerLen() }

// body returns the open body (without its frame header).
func (c *encoder) body() []byte { return c.buf[c.start+c.headerLen():] }

// finish closes the open frame (a no-op for unframed bodies). Errors:
// record.ErrTooLarge (a body over 1 GiB; snapshots are cut into 1 MiB
// pieces, so only a bug gets here).
func (c *encoder) finish() error {
	if c.f == nil {
		return nil
	}
	b, err := c.f.Finish(c.buf, c.start)
	if err != nil {
		return err
	}
	c.buf = b
	return nil
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

// checkpointEntries checks the version byte of a checkpoint body (3 or 4)
// and returns its entries.
func checkpointEntries(body []byte) ([]byte, error) {
	entries, _, _, err := parseCheckpoint(body)
	return entries, err
}

// parseCheckpoint splits a checkpoint body into its entries and, for
// version 4, the writer's clock (µs; hasClock false for version 3).
func parseCheckpoint(body []byte) (entries []byte, clock int64, hasClock bool, err error) {
	switch {
	case len(body) == 0:
		return nil, 0, false, fmt.Errorf("empty checkpoint body")
	case body[0] == checkpointV3:
		return body[1:], 0, false, nil
	case body[0] == checkpointVersion:
		v, n := binary.Varint(body[1:])
		if n <= 0 {
			return nil, 0, false, fmt.Errorf("checkpoint body: bad clock")
		}
		return body[1+n:], v, true, nil
	}
	return nil, 0, false, fmt.Errorf("checkpoint body of format %d, want %d or %d", body[0], checkpointV3, checkpointVersion)
}

// visitor receives the entries of a body in order.
type visitor interface {
	state(k Key, s lease.State, deleted bool)
	sub(k subKey, s Subscription, deleted bool)
	// The record calls come from format 1 and 2 bodies only.
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
// (1, 2 or 3) into v. It stops at the first malformed entry and returns an
// error; entries before it have been visited. Format 3 bodies hold no
// records: a record tag there is an error.
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
		case tag == tagRecord && version == 2:
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
		case tag == tagDropRecord && version == 2:
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

// nopVisitor checks a body without applying it (ApplyCheckpoint applies a
// body only once all of it decodes).
type nopVisitor struct{}

func (nopVisitor) state(Key, lease.State, bool)   {}
func (nopVisitor) sub(subKey, Subscription, bool) {}
func (nopVisitor) record(uint64, []byte)          {}
func (nopVisitor) dropRecord(uint64)              {}
func (nopVisitor) dropAllRecords()                {}
