package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Streaming the run format (issue 23: dedup CPU). A merge of four runs used
// to read each file whole, decode it into a slice of entries, merge those
// pairwise into another and encode that into a third buffer before writing
// it: ~80 bytes of fresh memory an id, every one of them zeroed, faulted in
// and collected, which with the reads of the partition filter's rebuilds
// was most of the dedup index's CPU. RunReader reads a run file a few pages
// at a time into one buffer, verifying each page before it hands out an
// entry of it, and RunEncoder writes one a page at a time, so a merge or a
// rebuild holds a few pages per run, whatever the runs' size. The bytes are
// those of EncodeRun and ScanRun (the same format, version 1).

// RunEncoder encodes a run file of a known entry count a page at a time:
// Header first, then Add each entry in (hash, offset) order, taking the
// encoded bytes with WriteTo as they accumulate, and Close at the end.
type RunEncoder struct {
	hdr  RunHeader
	buf  []byte // encoded bytes not yet written: buf[:end] (its length stays its capacity,
	end  int    // so an Add writes no slice header: no GC write barrier an entry)
	page int    // the page being filled
	at   int    // where its entries start in buf
	n    int    // entries added
	prev RunEntry
	err  error
}

// RunEncoderBuffer is the encoded bytes a RunEncoder of a large run
// buffers without growing: its writer writes them RunEncoderBuffer at a
// time (WritePrefix).
const RunEncoderBuffer = 2 << 20

// NewRunEncoder starts a run covering first..last that will hold count
// entries; its header is the first of the encoded bytes. Errors (ErrRun,
// wrapped) when first is 0, first > last, or count is more than the run
// can hold.
func NewRunEncoder(first, last uint64, count int) (*RunEncoder, error) {
	if first == 0 || first > last || count < 0 || uint64(count) > last-first+1 || uint64(count) > 1<<32-1 {
		return nil, fmt.Errorf("%w: run %d..%d of %d entries", ErrRun, first, last, count)
	}
	size := RunHeader{Count: count, First: first, Last: last}.Size()
	return newRunEncoder(first, last, count, int(min(size, RunEncoderBuffer+2*RunPageSize))), nil
}

// newRunEncoder is NewRunEncoder with a buffer of capacity size, its
// arguments checked by the caller.
func newRunEncoder(first, last uint64, count, size int) *RunEncoder {
	return newRunEncoderIn(nil, first, last, count, size)
}

// newRunEncoderIn is newRunEncoder encoding into buf's memory when it is
// large enough.
func newRunEncoderIn(buf []byte, first, last uint64, count, size int) *RunEncoder {
	e := &RunEncoder{hdr: RunHeader{Count: count, First: first, Last: last}}
	if size = max(size, RunHeaderSize+RunPageSize); cap(buf) >= size {
		e.buf = buf[:cap(buf)]
	} else {
		e.buf = make([]byte, size)
	}
	copy(e.buf, runMagic[:])
	e.buf[4] = RunVersion
	binary.LittleEndian.PutUint32(e.buf[8:], uint32(count))
	binary.LittleEndian.PutUint64(e.buf[12:], first)
	binary.LittleEndian.PutUint64(e.buf[20:], last)
	e.hdr.Check = crc32.Checksum(e.buf[:28], castagnoli)
	binary.LittleEndian.PutUint32(e.buf[28:], e.hdr.Check)
	e.at, e.end = RunHeaderSize, RunHeaderSize
	return e
}

// Header is the run's header (its check, which the pages continue, included).
func (e *RunEncoder) Header() RunHeader { return e.hdr }

// Add appends an entry. Entries must ascend by (hash, offset), lie within
// the run's offsets and be no more than its count: the first that does not
// is the error Close returns (nothing is added after it).
func (e *RunEncoder) Add(x RunEntry) {
	if e.err != nil {
		return
	}
	if x.Offset < e.hdr.First || x.Offset > e.hdr.Last || (e.n > 0 && !runLess(e.prev, x)) || e.n >= e.hdr.Count {
		e.err = fmt.Errorf("%w: run entry %d (%x, %d) out of order, outside %d..%d or past its count %d", ErrRun, e.n, x.Hash, x.Offset, e.hdr.First, e.hdr.Last, e.hdr.Count)
		return
	}
	if e.end+RunEntrySize+4 > len(e.buf) {
		b := make([]byte, 2*len(e.buf))
		copy(b, e.buf[:e.end])
		e.buf = b
	}
	b := e.buf[e.end : e.end+RunEntrySize]
	binary.LittleEndian.PutUint64(b, x.Hash)
	binary.LittleEndian.PutUint64(b[8:], x.Offset)
	e.end += RunEntrySize
	e.prev = x
	if e.n++; e.n%RunPageEntries == 0 || e.n == e.hdr.Count {
		binary.LittleEndian.PutUint32(e.buf[e.end:], pageCheck(e.hdr.Check, e.page, e.buf[e.at:e.end]))
		e.end += 4
		e.page++
		e.at = e.end
	}
}

// Buffered is how many encoded bytes (the header and whole pages) WriteTo
// would write now.
func (e *RunEncoder) Buffered() int { return e.at }

// WriteTo writes the encoded bytes not written yet (the header and whole
// pages; the page being filled stays, its check covers it whole) and
// returns how many it wrote.
func (e *RunEncoder) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(e.buf[:e.at])
	if err == nil && n < e.at {
		err = io.ErrShortWrite
	}
	if err != nil {
		return int64(n), err
	}
	e.end = copy(e.buf, e.buf[e.at:e.end])
	e.at = 0
	return int64(n), nil
}

// WritePrefix writes the first n of the encoded bytes not written yet (n ≤
// Buffered), keeping the rest for the next write.
func (e *RunEncoder) WritePrefix(w io.Writer, n int) error {
	if n < 0 || n > e.at {
		return fmt.Errorf("index: run encoder: write of %d bytes, %d buffered", n, e.at)
	}
	m, err := w.Write(e.buf[:n])
	if err == nil && m < n {
		err = io.ErrShortWrite
	}
	if err != nil {
		return err
	}
	e.end = copy(e.buf, e.buf[n:e.end])
	e.at -= n
	return nil
}

// Close reports whether every entry of the count was added in order: the
// error of the first that was not, or of a count not reached. The encoded
// bytes are complete once it returns nil (and WriteTo wrote them).
func (e *RunEncoder) Close() error {
	if e.err == nil && e.n != e.hdr.Count {
		e.err = fmt.Errorf("%w: run %d..%d got %d of its %d entries", ErrRun, e.hdr.First, e.hdr.Last, e.n, e.hdr.Count)
	}
	return e.err
}

// RunReader reads a run file's entries in file order ((hash, offset)
// ascending), verifying each page (CheckRunPage) and the order across pages
// before it hands out an entry of it, as ScanRun does, but a few pages at a
// time: its memory is one buffer, whatever the run's size.
type RunReader struct {
	r    io.ReaderAt
	hdr  RunHeader
	buf  []byte // pages read: p0 .. p0+pn-1
	p0   int
	pn   int
	page int    // the page entries come from
	ents []byte // its verified entries
	i    int    // the next entry of ents
	prev RunEntry
	err  error
}

// runReadPages is how many pages a RunReader reads at a time (64 KiB).
const runReadPages = 16

// NewRunReader checks the header of the run file r of size bytes and
// returns a reader of its entries. buf is reused for the reads when it is
// large enough (nil: allocated). Errors: ErrRun, wrapped, for a header
// that fails its check or a size other than the header's; a read error.
func NewRunReader(r io.ReaderAt, size int64, buf []byte) (*RunReader, error) {
	var hb [RunHeaderSize]byte
	if size < RunHeaderSize {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrRun, size)
	}
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, err
	}
	h, err := ParseRunHeader(hb[:])
	if err != nil {
		return nil, err
	}
	if size != h.Size() {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", ErrRun, size, h.Size())
	}
	if cap(buf) < runReadPages*RunPageSize {
		buf = make([]byte, runReadPages*RunPageSize)
	}
	return &RunReader{r: r, hdr: h, buf: buf[:runReadPages*RunPageSize], page: -1}, nil
}

// Header is the run's checked header.
func (x *RunReader) Header() RunHeader { return x.hdr }

// Buf is the read buffer, for the next reader to reuse.
func (x *RunReader) Buf() []byte { return x.buf }

// Next returns the next entry; ok is false after the last one or at the
// first error (Err), a page whose bytes do not verify or a failed read.
func (x *RunReader) Next() (e RunEntry, ok bool) {
	if x.i*RunEntrySize == len(x.ents) && !x.nextPage() {
		return RunEntry{}, false
	}
	e = RunEntryAt(x.ents, x.i)
	x.i++
	return e, true
}

// NextPage returns the verified entries of the next page not yet handed
// out, whole (entry i at [i·RunEntrySize, (i+1)·RunEntrySize): RunEntryAt;
// the hash is its first 8 bytes), after Next returned entries of the page
// before it; ok is false as for Next. The bytes are valid until the next
// call.
func (x *RunReader) NextPage() (ents []byte, ok bool) {
	if x.i*RunEntrySize < len(x.ents) {
		ents, x.i = x.ents[x.i*RunEntrySize:], len(x.ents)/RunEntrySize
		return ents, true
	}
	if !x.nextPage() {
		return nil, false
	}
	x.i = len(x.ents) / RunEntrySize
	return x.ents, true
}

// Err is the error that ended Next early (nil at the run's end).
func (x *RunReader) Err() error { return x.err }

// nextPage verifies the next page (reading the pages after it when it is
// not in the buffer) and makes it the one entries come from.
func (x *RunReader) nextPage() bool {
	if x.err != nil || x.page+1 >= x.hdr.Pages() {
		return false
	}
	x.page++
	at, n := x.hdr.Page(x.page)
	if x.page >= x.p0+x.pn {
		pages := min(runReadPages, x.hdr.Pages()-x.page)
		end := min(at+int64(pages)*RunPageSize, x.hdr.Size())
		b := x.buf[:end-at]
		if m, err := x.r.ReadAt(b, at); m < len(b) {
			if err == nil || err == io.EOF {
				err = fmt.Errorf("%w: short read of page %d", ErrRun, x.page)
			}
			x.err = err
			return false
		}
		x.p0, x.pn = x.page, pages
	}
	in := (x.page - x.p0) * RunPageSize
	ents, err := CheckRunPage(x.hdr, x.page, x.buf[in:in+n*RunEntrySize+4])
	if err != nil {
		x.err = err
		return false
	}
	if e := RunEntryAt(ents, 0); x.page > 0 && !runLess(x.prev, e) {
		x.err = fmt.Errorf("%w: page %d starts at (%x, %d), not after the page before it", ErrRun, x.page, e.Hash, e.Offset)
		return false
	}
	x.prev = RunEntryAt(ents, n-1)
	x.ents, x.i = ents, 0
	return true
}
