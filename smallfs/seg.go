package smallfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// hext is one homed segment of a virtual segment file: bytes
// [start, start+size) of the file, offsets [base, next).
type hext struct {
	start, size int64
	base, next  uint64
}

// vseg is a virtual segment file: its homed prefix (in the entry log) and
// its in-memory tail.
type vseg struct {
	fs *FS
	id [16]byte

	mu        sync.Mutex
	homed     []hext
	homedSize int64
	tail      []byte
	// last is the last homed segment read (a read of a header, then of its
	// segment, costs one entry-log read).
	lastBase uint64
	last     []byte
	// real is the real file once Materialize gave the directory one: every
	// operation goes to it. opens counts the open handles (under FS.mu):
	// the last to close closes real and leaves the name to the real
	// directory.
	real  vfs.File
	opens int
}

func (s *vseg) size() int64 { return s.homedSize + int64(len(s.tail)) }

// end is the offset after the file's last homed segment (its tail's
// records are not counted: Remove trims what the entry log holds).
func (s *vseg) end() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.homed); n > 0 {
		return s.homed[n-1].next
	}
	return 0
}

// readAt copies the file's bytes at off into p.
func (s *vseg) readAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.real != nil {
		return s.real.ReadAt(p, off)
	}
	return s.readAtLocked(p, off)
}

// readAtLocked is readAt of a virtual file with s.mu held.
func (s *vseg) readAtLocked(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("smallfs: negative offset %d", off)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= s.size() {
			return n, io.EOF
		}
		if at >= s.homedSize {
			n += copy(p[n:], s.tail[at-s.homedSize:])
			continue
		}
		i := s.find(at)
		e := s.homed[i]
		seg, err := s.segment(e)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], seg[at-e.start:])
	}
	return n, nil
}

// find returns the index of the homed extent holding byte at.
func (s *vseg) find(at int64) int {
	lo, hi := 0, len(s.homed)
	for lo < hi {
		m := (lo + hi) / 2
		if s.homed[m].start+s.homed[m].size <= at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// segment reads homed extent e's bytes from the entry log.
func (s *vseg) segment(e hext) ([]byte, error) {
	if s.last != nil && s.lastBase == e.base {
		return s.last, nil
	}
	seg, err := s.fs.el.Segment(s.id, e.base, s.last[:0])
	if err != nil {
		return nil, err
	}
	if int64(len(seg)) != e.size {
		return nil, fmt.Errorf("smallfs: segment at offset %d: %d bytes in the entry log, %d in the file", e.base, len(seg), e.size)
	}
	s.lastBase, s.last = e.base, seg
	return seg, nil
}

// truncate cuts (or extends with zeros) the file to size. A cut into the
// homed prefix must fall on a segment boundary: the segments past it leave
// the file's view (start-up cuts what no summary and no commit-log entry
// covers; the commit log's replay homes the same bytes again, and the entry
// log answers with the extent it has).
func (s *vseg) truncate(size int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.real != nil {
		return s.real.Truncate(size)
	}
	switch {
	case size < 0:
		return fmt.Errorf("smallfs: truncate to %d", size)
	case size >= s.homedSize:
		n := size - s.homedSize
		if n <= int64(len(s.tail)) {
			s.tail = s.tail[:n]
		} else {
			s.tail = append(s.tail, make([]byte, n-int64(len(s.tail)))...)
		}
		return nil
	}
	i := s.find(size)
	if i < len(s.homed) && s.homed[i].start != size {
		return fmt.Errorf("smallfs: truncate to byte %d inside the homed segment at offset %d", size, s.homed[i].base)
	}
	s.homed = s.homed[:i]
	s.homedSize, s.tail, s.last = size, nil, nil
	return nil
}

// home appends the tail's whole segments whose offsets all lie below
// below to the entry log, and keeps in memory only what is left.
func (s *vseg) home(below uint64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.real != nil {
		return 0, nil
	}
	pos, n := 0, 0
	var err error
	for pos+segment.HeaderSize <= len(s.tail) {
		size := segment.HeaderSize + int(binary.LittleEndian.Uint32(s.tail[pos+32:]))
		if pos+size > len(s.tail) {
			break
		}
		seg := s.tail[pos : pos+size]
		base, count, _, perr := segment.PeekSegment(seg)
		if perr != nil {
			err = fmt.Errorf("smallfs: the tail at byte %d: %w", s.homedSize+int64(pos), perr)
			break
		}
		if base+uint64(count) > below {
			break
		}
		if _, err = s.fs.el.Append(s.id, seg); errors.Is(err, entrylog.ErrTrimmed) {
			// Dropped meanwhile (its queue deleted): nothing left to home.
			err, pos = nil, len(s.tail)
			break
		} else if err != nil {
			break
		}
		s.homed = append(s.homed, hext{start: s.homedSize + int64(pos), size: int64(size), base: base, next: base + uint64(count)})
		pos += size
		n++
	}
	if pos > 0 {
		s.homedSize += int64(pos)
		s.tail = append([]byte(nil), s.tail[pos:]...)
	}
	return n, err
}

// handle is an open virtual segment file.
type handle struct {
	s      *vseg
	vd     *vdir
	base   string
	name   string
	flag   int
	closed bool
}

func (h *handle) check(write bool) error {
	if h.closed {
		return fs.ErrClosed
	}
	if write && h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &fs.PathError{Op: "write", Path: h.name, Err: errors.New("bad file descriptor")}
	}
	return nil
}

func (h *handle) ReadAt(p []byte, off int64) (int, error) {
	if err := h.check(false); err != nil {
		return 0, err
	}
	return h.s.readAt(p, off)
}

// Write appends (segment files are opened with os.O_APPEND).
func (h *handle) Write(p []byte) (int, error) {
	if err := h.check(true); err != nil {
		return 0, err
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.real != nil {
		return h.s.real.Write(p)
	}
	h.s.tail = append(h.s.tail, p...)
	return len(p), nil
}

// WriteAt writes within the in-memory tail or at the end.
func (h *handle) WriteAt(p []byte, off int64) (int, error) {
	if err := h.check(true); err != nil {
		return 0, err
	}
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.real != nil {
		return s.real.WriteAt(p, off)
	}
	if off < s.homedSize {
		return 0, fmt.Errorf("smallfs: %s: write at byte %d inside the homed prefix (%d bytes)", h.name, off, s.homedSize)
	}
	at := int(off - s.homedSize)
	if need := at + len(p); need > len(s.tail) {
		s.tail = append(s.tail, make([]byte, need-len(s.tail))...)
	}
	copy(s.tail[at:], p)
	return len(p), nil
}

// Sync is a no-op: the flush pass homes the records (FS.Home) and syncs
// the entry log; until then the commit log holds them.
func (h *handle) Sync() error {
	if err := h.check(false); err != nil {
		return err
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.real != nil {
		return h.s.real.Sync()
	}
	return nil
}

func (h *handle) Truncate(size int64) error {
	if err := h.check(true); err != nil {
		return err
	}
	return h.s.truncate(size)
}

func (h *handle) Size() (int64, error) {
	if err := h.check(false); err != nil {
		return 0, err
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.s.real != nil {
		return h.s.real.Size()
	}
	return h.s.size(), nil
}

func (h *handle) Allocate(off, n int64) error { return h.check(true) }
func (h *handle) Name() string                { return h.name }

func (h *handle) Close() error {
	if h.closed {
		return fs.ErrClosed
	}
	h.closed = true
	f := h.s.fs
	f.mu.Lock()
	h.s.opens--
	last := h.s.opens == 0 && h.vd.real && h.vd.segs[h.base] == h.s
	if last {
		delete(h.vd.segs, h.base)
	}
	f.mu.Unlock()
	if last {
		h.s.mu.Lock()
		defer h.s.mu.Unlock()
		if h.s.real != nil {
			return h.s.real.Close()
		}
	}
	return nil
}

var _ vfs.File = (*handle)(nil)

// Home appends the whole segments of dir's virtual segment file whose
// offsets all lie below below (what the commit log made durable) to the
// entry log, in the page cache; the caller then syncs the entry log once
// for every directory it homed. It returns the segments homed.
//
// Errors: dir is not virtual; the entry log's (what was homed before stays
// homed).
func (f *FS) Home(dir string, below uint64) (int, error) {
	dir = filepath.Clean(dir)
	f.mu.RLock()
	vd := f.dirs[dir]
	var segs []*vseg
	if vd != nil {
		for _, s := range vd.segs {
			segs = append(segs, s)
		}
	}
	f.mu.RUnlock()
	if vd == nil {
		return 0, fmt.Errorf("smallfs: %s is not a virtual directory", dir)
	}
	total := 0
	for _, s := range segs {
		n, err := s.home(below)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Bytes is the size of dir's virtual segment files (0 when not virtual):
// what the caller compares with its threshold to materialize it.
func (f *FS) Bytes(dir string) int64 {
	f.mu.RLock()
	vd := f.dirs[filepath.Clean(dir)]
	var segs []*vseg
	if vd != nil {
		for _, s := range vd.segs {
			segs = append(segs, s)
		}
	}
	f.mu.RUnlock()
	var n int64
	for _, s := range segs {
		s.mu.Lock()
		if s.real == nil {
			n += s.size()
		}
		s.mu.Unlock()
	}
	return n
}
