package segment

import (
	"fmt"
	"sort"
)

// ReadBuffer is reusable scratch for Read: the bytes read from segment files,
// decompressed record blocks, the returned Message slice and the strings.
// Message byte slices (Payload, Extra) alias it and stay valid until the
// buffer is passed to Read again or Reset. Message strings are copied out
// (one allocation per Read) and stay valid for ever. Not safe for concurrent
// use; one per reader goroutine.
type ReadBuffer struct {
	chunks [][]byte // byte arenas; never reallocated while in use
	cur    int      // chunk being filled
	msgs   []Message
	strs   []byte
	spans  []strSpans
}

type strSpans struct{ tx, tr, sub [2]uint32 }

// chunkSize is the smallest arena chunk: a read of 100 × 200 B messages fits.
const chunkSize = 256 << 10

// Reset forgets what the buffer holds (its memory is kept for reuse).
func (b *ReadBuffer) Reset() {
	for i := range b.chunks {
		b.chunks[i] = b.chunks[i][:0]
	}
	b.cur = 0
	clear(b.msgs) // drop references to old strings
	b.msgs = b.msgs[:0]
	b.strs = b.strs[:0]
	b.spans = b.spans[:0]
}

// alloc returns n bytes that stay put until Reset.
func (b *ReadBuffer) alloc(n int) []byte {
	for ; b.cur < len(b.chunks); b.cur++ {
		c := b.chunks[b.cur]
		if cap(c)-len(c) >= n {
			b.chunks[b.cur] = c[:len(c)+n]
			return c[len(c) : len(c)+n : len(c)+n]
		}
	}
	c := make([]byte, n, max(n, chunkSize))
	b.chunks = append(b.chunks, c)
	b.cur = len(b.chunks) - 1
	return c[:n:n]
}

// maxSpanBytes bounds one pread when the budget allows more.
const maxSpanBytes = 4 << 20

// Read returns messages with offset ≥ from, in offset order, at most maxMsgs
// of them (< 1 means 1) and stopping once their payload + extra bytes reach
// maxBytes (≤ 0 means no byte budget); at least one message is returned when
// one exists, even if it alone exceeds maxBytes. from below FirstOffset reads
// from FirstOffset; from ≥ NextOffset returns nothing; from inside a
// quarantined gap (see QuarantineFileName) reads from the first offset after it.
//
// Every segment read is checksum-verified; damage returns a *CorruptionError
// (with the messages decoded before it). Safe concurrently with Append: it
// sees only segments published before it started. The result and its byte
// slices live in buf (see ReadBuffer).
func (l *Log) Read(from uint64, maxMsgs, maxBytes int, buf *ReadBuffer) ([]Message, error) {
	buf.Reset()
	maxMsgs = max(maxMsgs, 1)
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if from >= l.NextOffset() {
		return nil, nil // nothing to read: no need to load a released log
	}
	if err := l.pin(); err != nil {
		return nil, fmt.Errorf("segment log %s: %w", l.dir, err)
	}
	defer l.unpin()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return nil, ErrClosed
	}
	from = max(from, l.firstLocked())
	i := sort.Search(len(l.files), func(i int) bool { return l.files[i].base > from }) - 1
	bytes := 0
	var err error
	for ; i >= 0 && i < len(l.files) && from < l.next; i++ {
		fi := l.files[i]
		if from >= fi.next {
			continue
		}
		from = max(from, fi.base) // a quarantined gap before fi (QUARANTINE) holds nothing
		if from >= fi.next {
			continue // fi is empty (the newest file before its first append)
		}
		if bytes, err = l.readFileLocked(fi, from, maxMsgs, maxBytes, bytes, buf); err != nil {
			break
		}
		if len(buf.msgs) >= maxMsgs || (maxBytes > 0 && bytes >= maxBytes) {
			break
		}
		from = fi.next
	}
	buf.finishStrings()
	return buf.msgs, err
}

// readFileLocked appends to buf.msgs the messages of fi from offset from,
// within the budgets, and returns the payload bytes counted so far.
func (l *Log) readFileLocked(fi *fileInfo, from uint64, maxMsgs, maxBytes, bytes int, buf *ReadBuffer) (int, error) {
	of, err := l.acquireLocked(fi)
	if err != nil {
		return bytes, err
	}
	defer of.unref()
	ents := of.idx.Entries()
	n := ents.Len()
	j := ents.FindOffset(from)
	if j < 0 {
		return bytes, fmt.Errorf("segment log %s: offset %d not in the index of %s: %w", l.dir, from, segName(fi.base), ErrCorrupt)
	}
	for j < n && len(buf.msgs) < maxMsgs && (maxBytes <= 0 || bytes < maxBytes) {
		// Pick segments j..k-1 for one pread, sized by the remaining budget.
		start := ents.At(j).Pos
		end, k, cnt := start, j, 0
		for k < n {
			e := ents.At(k)
			if k+1 < n {
				end = ents.At(k + 1).Pos
			} else {
				end = fi.size
			}
			cnt += int(e.Count)
			if k == j {
				cnt -= int(from - e.Base)
			}
			k++
			if len(buf.msgs)+cnt >= maxMsgs || end-start >= maxSpanBytes ||
				(maxBytes > 0 && int(end-start) >= maxBytes-bytes) {
				break
			}
		}
		span := buf.alloc(int(end - start))
		if _, err := of.seg.ReadAt(span, start); err != nil {
			return bytes, fmt.Errorf("segment log %s: read %s at %d: %w", l.dir, segName(fi.base), start, err)
		}
		for pos := start; pos < end; {
			var size int64
			size, bytes, err = l.decodeSegment(span[pos-start:], fi, pos, &from, maxMsgs, maxBytes, bytes, buf)
			if err != nil {
				return bytes, err
			}
			if len(buf.msgs) >= maxMsgs || (maxBytes > 0 && bytes >= maxBytes) {
				return bytes, nil
			}
			pos += size
		}
		j = k
	}
	return bytes, nil
}

// decodeSegment verifies the segment at the start of b (at byte pos of fi)
// and appends its records with offset ≥ *from to buf within the budgets.
func (l *Log) decodeSegment(b []byte, fi *fileInfo, pos int64, from *uint64, maxMsgs, maxBytes, bytes int, buf *ReadBuffer) (int64, int, error) {
	corrupt := func(h header, reason string) error {
		return &CorruptionError{File: join(l.dir, segName(fi.base)), StartByte: pos, EndByte: pos + h.size(),
			FirstOffset: h.base, LastOffset: h.base + uint64(max(h.count, 1)) - 1, Reason: reason}
	}
	h, err := parseHeader(b)
	if err == nil {
		err = verify(h, b)
	}
	if err != nil {
		return 0, bytes, corrupt(h, err.Error())
	}
	block := b[HeaderSize:h.size()]
	if h.codec != CodecNone {
		if block, err = decompress(buf.alloc(int(h.rawLen)), block, h.codec, int(h.rawLen)); err != nil {
			return 0, bytes, corrupt(h, err.Error())
		}
	}
	off := h.base
	for ; len(block) > 0; off++ {
		var r rawRecord
		if r, block, err = nextRecord(block); err != nil {
			return 0, bytes, corrupt(h, fmt.Sprintf("record %d: %v", off, err))
		}
		if off < *from {
			continue
		}
		if len(buf.msgs) >= maxMsgs || (maxBytes > 0 && bytes >= maxBytes) {
			return h.size(), bytes, nil
		}
		buf.addMessage(off, h.tsMicros, &r)
		bytes += len(r.payload) + len(r.extra)
		*from = off + 1
	}
	if off != h.base+uint64(h.count) {
		return 0, bytes, corrupt(h, fmt.Sprintf("%d records, header says %d", off-h.base, h.count))
	}
	return h.size(), bytes, nil
}

func (b *ReadBuffer) addMessage(off uint64, ts int64, r *rawRecord) {
	put := func(s []byte) [2]uint32 {
		at := uint32(len(b.strs))
		b.strs = append(b.strs, s...)
		return [2]uint32{at, uint32(len(b.strs))}
	}
	b.spans = append(b.spans, strSpans{tx: put(r.txid), tr: put(r.trace), sub: put(r.sub)})
	b.msgs = append(b.msgs, Message{Offset: off, TimestampMicros: ts, Record: Record{
		ID: r.id, Payload: r.payload, Extra: r.extra}})
}

// finishStrings copies every message's strings into one allocation.
func (b *ReadBuffer) finishStrings() {
	if len(b.strs) == 0 {
		return
	}
	s := string(b.strs)
	sub := func(sp [2]uint32) string {
		if sp[0] == sp[1] {
			return ""
		}
		return s[sp[0]:sp[1]]
	}
	for i := range b.msgs {
		sp := &b.spans[i]
		m := &b.msgs[i]
		m.TransactionID, m.TraceID, m.ProducerSub = sub(sp.tx), sub(sp.tr), sub(sp.sub)
	}
}
