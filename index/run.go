package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Dedup run file layout (docs/format.md section 4), little-endian: a sealed,
// immutable piece of the dedup index that covers the offsets first..last and
// holds an entry for every record among them that carries a transaction id,
// sorted by (hash, offset) so that one entry is found with one page read.
//
//	header, 32 bytes: "CMBR" | version u8 = 1 | 3 reserved zero bytes | count u32
//	                  | first u64 | last u64 | u32 check
//	page k (k = 0, 1, ...): up to RunPageEntries entries of 16 bytes
//	                  (xxhash64(transactionId) u64 | offset u64) | u32 check
//
// The header's check is CRC-32C of its bytes 0..27. Page k's check is the
// CRC-32C continued from the header's check over k (u32) and the page's
// entries, so a page is bound to its run and its place: a page copied from
// another run or moved fails. Every page but the last holds RunPageEntries
// entries; the file ends with the last page.
const (
	RunHeaderSize  = 32
	RunEntrySize   = 16
	RunPageEntries = 256
	// RunPageSize is the byte size of a full page: its entries and its check.
	RunPageSize = RunPageEntries*RunEntrySize + 4
	// RunVersion is the run file's format version; a file of another version
	// is deleted and rebuilt from the segments, never read.
	RunVersion = 1
)

var runMagic = [4]byte{'C', 'M', 'B', 'R'}

// ErrRun means a run file (or a page read from one) is not what its header
// and checks say: damage, a torn write, or another version. The file is
// rebuilt from the segments.
var ErrRun = errors.New("index: bad dedup run")

// RunEntry is one entry of a run: a transaction id's hash and the offset of
// the record carrying it.
type RunEntry struct{ Hash, Offset uint64 }

// RunHeader is a decoded run header.
type RunHeader struct {
	Count       int    // entries
	First, Last uint64 // the offsets the run covers, both included
	Check       uint32 // the header's check, which the page checks continue
}

// Pages is the number of pages of the run.
func (h RunHeader) Pages() int { return (h.Count + RunPageEntries - 1) / RunPageEntries }

// Size is the run file's byte size.
func (h RunHeader) Size() int64 {
	return RunHeaderSize + int64(h.Count)*RunEntrySize + 4*int64(h.Pages())
}

// Page returns where page k starts in the file and how many entries it holds.
func (h RunHeader) Page(k int) (at int64, entries int) {
	return RunHeaderSize + int64(k)*RunPageSize, min(RunPageEntries, h.Count-k*RunPageEntries)
}

// SortRunEntries sorts entries by (hash, offset), the order of a run file.
//
// Hashes are uniform (xxhash), so the entries are first scattered into
// buckets by their top bits (one counting pass, one move) and each bucket,
// of a few entries, is then sorted on its own: a seal of 6,144 ids spent 4 %
// of a push's CPU in a comparison sort of the whole run (issue 14). Ids
// crafted to share top bits only make their bucket large, which is then
// sorted like the whole run used to be: never worse than that.
func SortRunEntries(entries []RunEntry) { SortRunEntriesWith(entries, nil) }

// SortRunEntriesWith is SortRunEntries using tmp for its scratch when it is
// large enough (len(entries) entries); it returns the scratch it used, for
// the next sort to reuse.
func SortRunEntriesWith(entries, tmp []RunEntry) []RunEntry {
	if len(entries) < 64 {
		sortRunEntriesCmp(entries)
		return tmp
	}
	bits := 1
	for 1<<bits < len(entries)/4 && bits < 16 {
		bits++ // about four entries a bucket
	}
	shift := 64 - bits
	starts := make([]int, 1<<bits+1)
	for _, e := range entries {
		starts[e.Hash>>shift+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	if cap(tmp) < len(entries) {
		tmp = make([]RunEntry, len(entries))
	}
	tmp = tmp[:len(entries)]
	next := append([]int(nil), starts[:1<<bits]...)
	for _, e := range entries {
		b := e.Hash >> shift
		tmp[next[b]] = e
		next[b]++
	}
	copy(entries, tmp)
	for b := 0; b < 1<<bits; b++ {
		bucket := entries[starts[b]:starts[b+1]]
		if len(bucket) > 16 {
			sortRunEntriesCmp(bucket)
			continue
		}
		for i := 1; i < len(bucket); i++ { // insertion sort
			for j := i; j > 0 && runLess(bucket[j], bucket[j-1]); j-- {
				bucket[j], bucket[j-1] = bucket[j-1], bucket[j]
			}
		}
	}
	return tmp
}

func sortRunEntriesCmp(entries []RunEntry) {
	slices.SortFunc(entries, func(a, b RunEntry) int {
		if c := cmp.Compare(a.Hash, b.Hash); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
}

func runLess(a, b RunEntry) bool {
	return a.Hash < b.Hash || (a.Hash == b.Hash && a.Offset < b.Offset)
}

// EncodeRun returns the run file covering first..last with entries, which
// must be sorted by (hash, offset) (SortRunEntries), hold offsets within
// first..last, and be fewer than 2³². It panics otherwise: the caller built
// them (a broken invariant, not input).
func EncodeRun(first, last uint64, entries []RunEntry) []byte {
	return AppendRun(nil, first, last, entries)
}

// AppendRun is EncodeRun writing into dst's memory when it is large
// enough (dst's contents are overwritten, not appended to): the encoded
// file is the returned slice.
func AppendRun(dst []byte, first, last uint64, entries []RunEntry) []byte {
	if first == 0 || first > last || uint64(len(entries)) > 1<<32-1 {
		panic(fmt.Sprintf("index: run %d..%d of %d entries", first, last, len(entries)))
	}
	h := RunHeader{Count: len(entries), First: first, Last: last}
	e := newRunEncoderIn(dst, first, last, len(entries), int(h.Size()))
	for _, x := range entries {
		e.Add(x)
	}
	if err := e.Close(); err != nil {
		panic(err.Error())
	}
	return e.buf[:e.end]
}

func pageCheck(headerCheck uint32, k int, entries []byte) uint32 {
	var kb [4]byte
	binary.LittleEndian.PutUint32(kb[:], uint32(k))
	return crc32.Update(crc32.Update(headerCheck, castagnoli, kb[:]), castagnoli, entries)
}

// ParseRunHeader decodes and checks the header at the start of b. A run
// covers at least one offset (1 ≤ first ≤ last) and holds at most one
// entry per offset. Errors: ErrRun, wrapped with what is wrong.
func ParseRunHeader(b []byte) (RunHeader, error) {
	switch {
	case len(b) < RunHeaderSize:
		return RunHeader{}, fmt.Errorf("%w: header of %d bytes", ErrRun, len(b))
	case [4]byte(b[:4]) != runMagic:
		return RunHeader{}, fmt.Errorf("%w: magic %x", ErrRun, b[:4])
	case b[4] != RunVersion:
		return RunHeader{}, fmt.Errorf("%w: version %d, this comb reads %d", ErrRun, b[4], RunVersion)
	}
	h := RunHeader{
		Count: int(binary.LittleEndian.Uint32(b[8:])),
		First: binary.LittleEndian.Uint64(b[12:]),
		Last:  binary.LittleEndian.Uint64(b[20:]),
		Check: binary.LittleEndian.Uint32(b[28:]),
	}
	if got := crc32.Checksum(b[:28], castagnoli); got != h.Check {
		return RunHeader{}, fmt.Errorf("%w: header check %08x, computed %08x", ErrRun, h.Check, got)
	}
	if b[5]|b[6]|b[7] != 0 || h.First == 0 || h.First > h.Last || uint64(h.Count) > h.Last-h.First+1 {
		return RunHeader{}, fmt.Errorf("%w: header says %d entries for offsets %d..%d", ErrRun, h.Count, h.First, h.Last)
	}
	return h, nil
}

// CheckRunPage verifies page k of the run h (its bytes, entries and check,
// as read from the file) and returns its entries' bytes: entry i is at
// [i·RunEntrySize, (i+1)·RunEntrySize) (RunEntryAt). Entries must ascend by
// (hash, offset) and lie within h's offsets. Errors: ErrRun, wrapped.
func CheckRunPage(h RunHeader, k int, page []byte) ([]byte, error) {
	if k < 0 || k >= h.Pages() {
		return nil, fmt.Errorf("%w: page %d of %d", ErrRun, k, h.Pages())
	}
	_, n := h.Page(k)
	if len(page) != n*RunEntrySize+4 {
		return nil, fmt.Errorf("%w: page %d of %d bytes, want %d", ErrRun, k, len(page), n*RunEntrySize+4)
	}
	ents := page[:n*RunEntrySize]
	if want, got := binary.LittleEndian.Uint32(page[len(ents):]), pageCheck(h.Check, k, ents); want != got {
		return nil, fmt.Errorf("%w: page %d check %08x, computed %08x", ErrRun, k, want, got)
	}
	var prev RunEntry
	for i := 0; i < n; i++ {
		e := RunEntryAt(ents, i)
		if e.Offset < h.First || e.Offset > h.Last || (i > 0 && !runLess(prev, e)) {
			return nil, fmt.Errorf("%w: page %d entry %d (%x, %d) out of order or outside %d..%d", ErrRun, k, i, e.Hash, e.Offset, h.First, h.Last)
		}
		prev = e
	}
	return ents, nil
}

// RunEntryAt decodes entry i of a page's entries (from CheckRunPage).
func RunEntryAt(ents []byte, i int) RunEntry {
	e := ents[i*RunEntrySize:]
	return RunEntry{Hash: binary.LittleEndian.Uint64(e), Offset: binary.LittleEndian.Uint64(e[8:])}
}

// ScanRun checks a whole run file and calls fn with each entry, in file
// order, after the page holding it verified (so fn sees only verified
// entries, but may see some before a later page fails). The file must be
// exactly as long as its header says, and entries ascend across pages too.
// It never panics on any input. Errors: ErrRun, wrapped with what is wrong.
func ScanRun(file []byte, fn func(page int, e RunEntry)) (RunHeader, error) {
	h, err := ParseRunHeader(file)
	if err != nil {
		return h, err
	}
	if int64(len(file)) != h.Size() {
		return h, fmt.Errorf("%w: %d bytes, the header says %d", ErrRun, len(file), h.Size())
	}
	var prev RunEntry
	for k := 0; k < h.Pages(); k++ {
		at, n := h.Page(k)
		ents, err := CheckRunPage(h, k, file[at:at+int64(n*RunEntrySize+4)])
		if err != nil {
			return h, err
		}
		if e := RunEntryAt(ents, 0); k > 0 && !runLess(prev, e) {
			return h, fmt.Errorf("%w: page %d starts at (%x, %d), not after the page before it", ErrRun, k, e.Hash, e.Offset)
		}
		for i := 0; i < n; i++ {
			prev = RunEntryAt(ents, i)
			if fn != nil {
				fn(k, prev)
			}
		}
	}
	return h, nil
}
