package datadir

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/walentry"
)

// WAL is what the commit log holds, read as the server's recovery reads
// it (broker/open.go: scanCommitLog, replayCommitLog) but without writing
// anything (commitlog.Inspect: no torn tail zeroed).
type WAL struct {
	Present     bool // <data>/commitlog exists
	Files       int
	Start       uint64 // the recorded truncation point (0 = none)
	First, Last uint64 // LSNs of the entries the log keeps (0 = none)
	Entries     int
	Kinds       map[byte]int // entries by walentry kind
	Tail        record.Tail  // what follows the newest file's last batch (Torn, Damaged, Corrupt; Clean otherwise)
	TailFile    string       // base name
	TailStart   int64
	TailEnd     int64
	Err         error    // damage that is not a tail (wraps commitlog.ErrCorrupt)
	BadEntries  []string // entries that do not decode (the server refuses them)
	Covers      uint64   // the metadata snapshot's covers LSN the Meta entries follow
	Meta        []meta.Record
	Created     map[[16]byte]bool    // partitions a Meta entry created
	Logs        map[[16]byte]*WALLog // push and DLQ entries, by partition or queue id
	PushRecords int64                // records in push and DLQ entries
	TxEntries   int
	Checkpoints int
	// Streams is the stream-query registrations (walentry.Stream entries) that decode, in
	// LSN order; a registry file's Covers says which of them it already holds.
	Streams      []StreamEntry
	keepSegBytes func(id [16]byte, base, end uint64) bool
}

// StreamEntry is one stream-query registration of the commit log: the query
// as it stands after it, and whether it reset the query's state.
type StreamEntry struct {
	LSN   uint64
	Query streams.Query
	Reset bool
}

// WALLog is one log's push or DLQ entries, in LSN order.
type WALLog struct {
	DLQ  bool
	Segs []WALSeg
}

// WALSeg is one push or DLQ entry: the segment exactly as appended to the
// log's file. Bytes is kept only for the logs ReadWAL was asked to keep.
type WALSeg struct {
	LSN      uint64
	Base     uint64
	Count    uint32
	TsMicros int64
	Header   [segment.HeaderSize]byte // compared with the file's segment at Base
	Bytes    []byte
}

// End is one past the entry's last offset.
func (s WALSeg) End() uint64 { return s.Base + uint64(s.Count) }

// FirstBase is the base offset of the log's first retained entry: the server
// keeps the log's files below it (everything from it on is replayed).
func (l *WALLog) FirstBase() (uint64, bool) {
	if l == nil || len(l.Segs) == 0 {
		return 0, false
	}
	return l.Segs[0].Base, true
}

// ReadWAL reads <data>/commitlog read-only. Metadata entries after covers (the
// snapshot's LSN) are kept, as the server applies them; keepSegBytes (nil =
// none) says which segments' bytes are kept, by log id and offsets [base,
// end) (dump and replay read their records). Damage is reported in the view;
// the error is for I/O.
func ReadWAL(dataDir string, covers uint64, keepSegBytes func(id [16]byte, base, end uint64) bool) (*WAL, error) {
	v := &WAL{Covers: covers, Kinds: map[byte]int{}, Created: map[[16]byte]bool{}, Logs: map[[16]byte]*WALLog{}, keepSegBytes: keepSegBytes}
	dir := filepath.Join(dataDir, layout.CommitLog)
	if ok, err := isDir(dir); err != nil || !ok {
		return v, err
	}
	v.Present = true
	in, err := commitlog.Inspect(nil, dir, v.add)
	if err != nil {
		return nil, fmt.Errorf("commit log: %w", err)
	}
	v.Files, v.Start, v.First, v.Last = in.Files, uint64(in.Start), uint64(in.First), uint64(in.Last)
	v.Err = in.Err
	if in.Tail != record.TailClean && in.Tail != record.TailZeros || errors.Is(in.Err, commitlog.ErrShortFile) {
		v.Tail, v.TailFile, v.TailStart, v.TailEnd = in.Tail, in.TailFile, in.TailStart, in.TailEnd
	}
	return v, nil
}

// Unread says why some of the commit log's entries were not read, wrapping
// ErrCommitLogDamaged, or is nil when every entry it keeps was: damage that
// is not a tail (Err), a damaged batch a verified one follows (Tail
// Corrupt), entries that do not decode. A recovered read (View.EachRecovered)
// then lacks whatever records only those entries hold, with no way to tell
// which logs they belong to, so dump and replay report it after what they
// could read.
func (v *WAL) Unread() error {
	switch {
	case v.Err != nil:
		return fmt.Errorf("%w: %v", ErrCommitLogDamaged, v.Err)
	case v.Tail == record.TailCorrupt:
		return fmt.Errorf("%w: %s bytes [%d,%d) are damaged and a verified batch follows them", ErrCommitLogDamaged, v.TailFile, v.TailStart, v.TailEnd)
	case len(v.BadEntries) > 0:
		return fmt.Errorf("%w: %s", ErrCommitLogDamaged, v.BadEntries[0])
	}
	return nil
}

// add takes one entry, as scanCommitLog does.
func (v *WAL) add(e commitlog.Entry) error {
	v.Entries++
	v.Kinds[e.Kind]++
	bad := func(err error) {
		v.BadEntries = append(v.BadEntries, fmt.Sprintf("entry %d (kind %d): %v", e.LSN, e.Kind, err))
	}
	switch e.Kind {
	case walentry.Meta:
		if uint64(e.LSN) <= v.Covers {
			return nil
		}
		recs, err := walentry.DecodeMeta(e.Payload)
		if err != nil {
			bad(err)
			return nil
		}
		for _, r := range recs {
			if r.Kind == meta.KindPartitionCreate {
				v.Created[r.ID] = true
			}
		}
		v.Meta = append(v.Meta, recs...)
	case walentry.Push, walentry.DLQ:
		id, seg, err := walentry.SplitLog(e.Payload)
		if err == nil {
			err = v.addSegment(uint64(e.LSN), id, e.Kind == walentry.DLQ, seg)
		}
		if err != nil {
			bad(err)
		}
	case walentry.Checkpoint:
		v.Checkpoints++
	case walentry.Tx:
		v.TxEntries++
		if _, err := walentry.DecodeTx(e.Payload); err != nil { // the server's replay refuses to start on it
			bad(err)
		}
	case walentry.Stream:
		q, reset, err := streams.DecodeEntry(e.Payload)
		if err != nil {
			bad(err)
			return nil
		}
		v.Streams = append(v.Streams, StreamEntry{LSN: uint64(e.LSN), Query: q, Reset: reset})
	}
	return nil
}

func (v *WAL) addSegment(lsn uint64, id [16]byte, dlq bool, seg []byte) error {
	base, count, ts, err := segment.PeekSegment(seg)
	if err != nil {
		return err
	}
	l := v.Logs[id]
	if l == nil {
		l = &WALLog{DLQ: dlq}
		v.Logs[id] = l
	}
	s := WALSeg{LSN: lsn, Base: base, Count: count, TsMicros: ts}
	copy(s.Header[:], seg)
	if v.keepSegBytes != nil && v.keepSegBytes(id, base, base+uint64(count)) {
		s.Bytes = append([]byte(nil), seg...)
	}
	l.Segs = append(l.Segs, s)
	v.PushRecords += int64(count)
	return nil
}

// EachCheckpoint calls fn with every cursor checkpoint of the commit log with
// an LSN >= from, in LSN order (what the server replays through
// cursor.Engine.ApplyCheckpoint). Damage ends it quietly (ReadWAL reports it).
func EachCheckpoint(dataDir string, from uint64, fn func(lsn uint64, body []byte) error) error {
	dir := filepath.Join(dataDir, layout.CommitLog)
	if ok, err := isDir(dir); err != nil || !ok {
		return err
	}
	_, err := commitlog.Inspect(nil, dir, func(e commitlog.Entry) error {
		if e.Kind != walentry.Checkpoint || uint64(e.LSN) < from {
			return nil
		}
		return fn(uint64(e.LSN), e.Payload)
	})
	return err
}

// Segments is l's entries, nil for a log the commit log holds nothing of (l nil).
func (l *WALLog) Segments() []WALSeg {
	if l == nil {
		return nil
	}
	return l.Segs
}
