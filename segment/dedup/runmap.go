package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/index"
)

// Mapped run files (issue 23: a lookup at ≤ 10 µs a batch of 100). A run
// filter's false positive used to cost a pread and a CRC-32C of the 4 KiB
// page (~2 µs, 65 % of a lookup's CPU at 10 M ids): with a 1 B an id memory
// budget the filters let ~15 page touches a batch through, so a touch must
// cost a memory access, not a system call. On the real file system a run's
// file is mapped read-only on the first touch (the descriptor is closed at
// once: a mapping holds no handle of the handle cache), each page is
// checked (index.CheckRunPage) the first time it is touched and marked in
// the run's verified bitmap, and a touch of a verified page reads a cache
// line or two of it (interpolated: hashes are uniform).
//
// What the doc.go rule asks (nothing trusted past the first byte that
// fails) holds as before: no entry is read from a page before that page
// verified, in this mapping; a page that fails makes the run be rebuilt
// from the segments, as a failed pread page does. Run files are never
// written after they are whole (createRunFile), so a verified page stays what it verified as
// (a file could still be changed behind the mapping by another program, or
// a page re-read from a failing disk: the verified bitmaps are cleared every
// reverifyEvery lookups, lookup.go, so such a page is checked again by its
// next touch after that; the load and `comb fsck` check every page).
//
// A mapped file cut short by something else than comb raises SIGBUS on a
// touch past its new end: lookups run with debug.SetPanicOnFault, so that
// fault is a panic that findRuns recovers and turns into the run's damage
// (rebuilt from the segments), never a crash. A file system whose files are
// no *os.File (the in-memory twin, fault injection) has the pread path.

// fdFile is a vfs.File backed by an *os.File (vfs.OS), which can be mapped.
type fdFile interface{ Fd() uintptr }

// errNoMap means the run's file cannot be mapped here (not an OS file): the
// pread path reads it.
var errNoMap = errors.New("dedup: run file not mappable")

// mapLocked maps r's file read-only, checking that its header is r's and
// its size the header's. errNoMap: use the pread path; another error is the
// run's damage (or a missing file).
func (r *dedupRun) mapLocked(d *Index) error {
	if r.noMap {
		return errNoMap
	}
	f, err := d.cfg.FS.OpenFile(d.path(r.name()), os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name(), err)
	}
	defer func() { _ = f.Close() }()
	fd, ok := f.(fdFile)
	if !ok {
		r.noMap = true
		return errNoMap
	}
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("%s: %w", r.name(), err)
	}
	if size != r.hdr.Size() {
		return fmt.Errorf("%s: %w: %d bytes, the header says %d", r.name(), index.ErrRun, size, r.hdr.Size())
	}
	m, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		r.noMap = true // address space or a kernel limit: pread still works
		return errNoMap
	}
	_ = unix.Madvise(m, unix.MADV_RANDOM) // a touch reads one page: no read-ahead around it
	// Kept before the header is read: a fault there (the file cut short
	// since Size) leaves it for closeRunsLocked to unmap.
	r.m, r.verified = m, make([]uint64, (r.hdr.Pages()+63)/64)
	if h, err := index.ParseRunHeader(m); err != nil || h != r.hdr {
		r.unmap()
		if err == nil {
			err = fmt.Errorf("%w: header changed since the load", index.ErrRun)
		}
		return fmt.Errorf("%s: %w", r.name(), err)
	}
	return nil
}

// unmap drops r's mapping (the run leaves memory; no lookup holds a slice
// of it: lookups run under the dedup lock, as this does).
func (r *dedupRun) unmap() {
	if r.m != nil {
		_ = unix.Munmap(r.m)
		r.m, r.verified = nil, nil
	}
}

// mappedPage returns page k's entries from the mapping, checking the page
// the first time it is touched.
func (r *dedupRun) mappedPage(k int) ([]byte, error) {
	at, n := r.hdr.Page(k)
	page := r.m[at : at+int64(n*index.RunEntrySize+4)]
	if r.verified[k>>6]&(1<<(k&63)) == 0 {
		if _, err := index.CheckRunPage(r.hdr, k, page); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name(), err)
		}
		r.verified[k>>6] |= 1 << (k & 63)
	}
	return page[:n*index.RunEntrySize], nil
}

// faultError is a memory fault (SIGBUS: the mapped file was cut short)
// while a lookup touched run's mapping.
type faultError struct {
	run *dedupRun
	p   any
}

func (e *faultError) Error() string {
	return fmt.Sprintf("%s: %v: the mapped file was cut short: %v", e.run.name(), index.ErrRun, e.p)
}

func (e *faultError) Unwrap() error { return index.ErrRun }

// isFault reports whether a recovered panic is a memory fault inside r's
// mapping (debug.SetPanicOnFault's runtime.Error carries the address; any
// other fault, a nil dereference included, is a bug and panics on).
func isFault(p any, r *dedupRun) bool {
	f, ok := p.(interface{ Addr() uintptr })
	if !ok || r == nil || len(r.m) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(r.m)))
	return f.Addr() >= base && f.Addr() < base+uintptr(len(r.m))
}

// touch reads the word of r's mapping where an entry with hash h would be
// (the guess lowerBound starts from), to bring its cache line in early. The
// value decides nothing: it is read before the page verified.
func (r *dedupRun) touch(h uint64) uint64 {
	if len(r.pageFirst) == 0 || h < r.pageFirst[0] {
		return 0
	}
	k := r.startPage(h)
	at, n := r.hdr.Page(k)
	j := r.guess(k, n, h)
	return binary.LittleEndian.Uint64(r.m[at+int64(j*index.RunEntrySize):])
}
