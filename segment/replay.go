package segment

import (
	"fmt"
)

// AppendSegment writes seg, one whole segment exactly as AppendTo returned
// it (header and stored block), at the end of the log: the replay of an
// append whose bytes a commit log kept while the file lost them (issue 14,
// see OpenFrom). seg is written byte for byte, whatever Options.Codec says,
// so replaying what AppendTo returned into a log opened at the same offset
// gives the same file; everything Append maintains follows (rotation, the
// segment index, the dedup index when loaded).
//
// seg is verified before anything is written: the header's rules (magic,
// version, codec, reserved bits, lengths), its length (exactly one segment),
// the checksum, and a record block that decodes into as many records as the
// header says; then it must continue the log: its base offset must be
// NextOffset() and its timestamp not below LastTimestamp().
//
// Durability: Append's (written, not synced). Errors: ErrSegmentMismatch
// (wrapped, with both offsets) when the base offset is not NextOffset();
// an error wrapping ErrCorrupt (not a *CorruptionError: the bytes are not
// this log's file) when seg does not verify or goes back in time; ErrClosed,
// the sticky ErrSyncFailed / ErrWriteFailed, or the I/O error as Append.
//
// Not safe for concurrent use with itself, Append, AppendTo,
// DeleteFilesBefore or Close.
func (l *Log) AppendSegment(seg []byte) (firstOffset uint64, err error) {
	if err := l.writable(); err != nil {
		return 0, err
	}
	h, err := parseHeader(seg)
	if err == nil && int64(len(seg)) != h.size() {
		err = fmt.Errorf("%d bytes, the header says a segment of %d", len(seg), h.size())
	}
	if err == nil {
		err = verify(h, seg)
	}
	if err == nil {
		wb := writeBufs.Get().(*writeBuf)
		err = eachRecord(h, seg, wb, func(*rawRecord) {})
		wb.put()
	}
	if err != nil {
		return 0, fmt.Errorf("segment log %s: replayed segment: %s: %w", l.dir, err, ErrCorrupt)
	}
	if err := l.pin(); err != nil {
		return 0, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	if h.base != l.next {
		return 0, fmt.Errorf("segment log %s: replayed segment holds offsets %d-%d, the log's next offset is %d: %w",
			l.dir, h.base, h.last(), l.next, ErrSegmentMismatch)
	}
	if h.tsMicros < l.lastTs {
		return 0, fmt.Errorf("segment log %s: replayed segment at offset %d is stamped %d µs, before the log's last segment (%d µs): %w",
			l.dir, h.base, h.tsMicros, l.lastTs, ErrCorrupt)
	}
	if err := l.maybeRotate(h.tsMicros); err != nil {
		return 0, fmt.Errorf("segment log %s: rotate: %w", l.dir, err)
	}
	written, err := l.writeSegment(seg, h)
	if !written {
		return 0, err
	}
	// Checked after the segment is published: a load that starts later
	// reads it from the file, one that finished earlier needs its ids.
	if l.dedup.Loaded() {
		var recs []Record
		wb := writeBufs.Get().(*writeBuf)
		_ = eachRecord(h, seg, wb, func(r *rawRecord) {
			recs = append(recs, Record{TransactionID: string(r.txid)})
		})
		wb.put()
		l.dedupAppend(h.base, recs)
	}
	return h.base, err
}

// eachRecord decodes the record block of the verified segment seg (header
// h), decompressing into wb.raw, and passes every record to fn; the record
// count must match the header's.
func eachRecord(h header, seg []byte, wb *writeBuf, fn func(*rawRecord)) error {
	block := seg[HeaderSize:h.size()]
	if h.codec != CodecNone {
		wb.raw = grow(wb.raw[:0], int(h.rawLen))
		var err error
		if block, err = decompress(wb.raw[:h.rawLen], block, h.codec, int(h.rawLen)); err != nil {
			return err
		}
	}
	n := uint32(0)
	var r rawRecord // one for the loop: fn's pointer makes it escape
	for len(block) > 0 {
		var rest []byte
		var err error
		r, rest, err = nextRecord(block)
		if err != nil {
			return fmt.Errorf("record %d: %w", h.base+uint64(n), err)
		}
		if n == h.count {
			return fmt.Errorf("more records than the %d the header says", h.count)
		}
		fn(&r)
		block = rest
		n++
	}
	if n != h.count {
		return fmt.Errorf("%d records, header says %d", n, h.count)
	}
	return nil
}
