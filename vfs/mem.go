package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Mem is the in-memory twin of OS for tests (see the package comment).
// Crash returns what survives a power loss; SetCapacity turns it into a small
// disk. The zero value is not usable: call NewMem or NewStrictMem.
type Mem struct {
	mu     sync.Mutex // the namespace; taken before any node's lock
	strict bool
	// syncFSNoop makes SyncFS a no-op (SetSyncFSNoop); under mu.
	syncFSNoop bool
	fsType     int64 // SetFSType; under mu

	// capMu guards the capacity accounting; a leaf lock (taken under a
	// node's lock by writes).
	capMu    sync.Mutex
	capacity int64 // bytes; 0 = unlimited
	used     int64 // bytes held by the current files

	files map[string]*memNode
	dirs  map[string]bool
	// The names as of the last SyncDir of their directory (strict only).
	durableFiles map[string]*memNode
	durableDirs  map[string]bool
	locks        map[string]bool
}

type memNode struct {
	mu      sync.Mutex
	data    []byte
	durable []byte
	mapped  bool
}

// NewMem returns an empty lenient twin: names are durable as soon as they are
// made (only file contents depend on Sync).
func NewMem() *Mem {
	return &Mem{files: map[string]*memNode{}, dirs: map[string]bool{}, durableFiles: map[string]*memNode{}, durableDirs: map[string]bool{}}
}

// NewStrictMem returns an empty twin in which a name survives Crash only if
// its directory was synced after the name was made, as on a real file system.
// root and its parents exist and are durable from the start.
func NewStrictMem(root string) *Mem {
	m := NewMem()
	m.strict = true
	for d := filepath.Clean(root); ; d = filepath.Dir(d) {
		m.dirs[d] = true
		m.durableDirs[d] = true
		if d == filepath.Dir(d) {
			break
		}
	}
	return m
}

// SetCapacity makes the file system hold at most n bytes of file data (0 =
// unlimited): a write past it writes what fits and fails with ENOSPC, as
// Linux does. Removing or truncating files frees space.
func (m *Mem) SetCapacity(n int64) {
	m.capMu.Lock()
	m.capacity = n
	m.capMu.Unlock()
}

// SetSyncFSNoop makes SyncFS return nil and make nothing durable (noop
// true), as syncfs(2) does on a file system without a sync_fs method (FUSE
// without it, some network file systems): only Sync and SyncDir count. The
// twins Crash returns keep the setting.
func (m *Mem) SetSyncFSNoop(noop bool) {
	m.mu.Lock()
	m.syncFSNoop = noop
	m.mu.Unlock()
}

// Used returns the bytes of file data held now.
func (m *Mem) Used() int64 {
	m.capMu.Lock()
	defer m.capMu.Unlock()
	return m.used
}

// Crash returns a new twin holding what a power loss now would leave: every
// file with the bytes of its last Sync (or SyncFS); mapped files keep their
// current contents when keepMapped (their pages may have been written back
// at any time) and come back empty otherwise. In a strict twin only durable
// names survive.
func (m *Mem) Crash(keepMapped bool) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMem()
	out.strict, out.syncFSNoop, out.fsType = m.strict, m.syncFSNoop, m.fsType
	files, dirs := m.files, m.dirs
	if m.strict {
		files, dirs = m.durableFiles, m.durableDirs
	}
	for d := range dirs {
		if !m.strict || m.durableChainLocked(d) {
			out.dirs[d] = true
			out.durableDirs[d] = true
		}
	}
	for name, n := range files {
		if !out.dirs[filepath.Dir(name)] {
			continue
		}
		n.mu.Lock()
		var data []byte
		switch {
		case n.mapped && keepMapped:
			data = append([]byte(nil), n.data...)
		case n.mapped:
		default:
			data = append([]byte(nil), n.durable...)
		}
		n.mu.Unlock()
		c := &memNode{data: data, durable: append([]byte(nil), data...), mapped: n.mapped}
		out.files[name] = c
		out.durableFiles[name] = c
		out.used += int64(len(data))
	}
	return out
}

func (m *Mem) durableChainLocked(d string) bool {
	for ; ; d = filepath.Dir(d) {
		if !m.durableDirs[d] {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Bytes returns a copy of name's current contents, or nil when it does not exist.
func (m *Mem) Bytes(name string) []byte {
	m.mu.Lock()
	n := m.files[filepath.Clean(name)]
	m.mu.Unlock()
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]byte(nil), n.data...)
}

// SetBytes replaces name's contents durably, creating it (and its directory)
// if missing: a test writing damage "on disk".
func (m *Mem) SetBytes(name string, b []byte) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mkdirAllLocked(filepath.Dir(name), true)
	n := &memNode{data: append([]byte(nil), b...), durable: append([]byte(nil), b...)}
	if old := m.files[name]; old != nil {
		old.mu.Lock()
		m.grow(-int64(len(old.data)))
		old.mu.Unlock()
	}
	m.capMu.Lock()
	m.used += int64(len(b))
	m.capMu.Unlock()
	m.files[name] = n
	m.durableFiles[name] = n
}

func (m *Mem) mkdirAllLocked(dir string, durable bool) {
	for d := dir; !m.dirs[d]; d = filepath.Dir(d) {
		m.dirs[d] = true
		if durable || !m.strict {
			m.durableDirs[d] = true
		}
		if d == filepath.Dir(d) {
			break
		}
	}
}

// grow reserves delta more bytes of capacity (delta may be negative). It
// returns how many of them fit.
func (m *Mem) grow(delta int64) int64 {
	m.capMu.Lock()
	defer m.capMu.Unlock()
	if delta > 0 && m.capacity > 0 && m.used+delta > m.capacity {
		delta = max(0, m.capacity-m.used)
	}
	m.used += delta
	return delta
}

func (m *Mem) OpenFile(name string, flag int) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	n := m.files[name]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		m.mu.Unlock()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		m.mu.Unlock()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case n == nil:
		if !m.dirs[filepath.Dir(name)] {
			m.mu.Unlock()
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = &memNode{}
		m.files[name] = n
	}
	m.mu.Unlock()
	h := &memHandle{m: m, n: n, name: name, flag: flag}
	if flag&os.O_TRUNC != 0 && h.writable() {
		if err := h.Truncate(0); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (m *Mem) OpenMapped(name string) (Mapping, error) {
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	h := f.(*memHandle)
	h.n.mu.Lock()
	h.n.mapped = true
	h.n.mu.Unlock()
	return &memMapping{h: h}, nil
}

func (m *Mem) ReadFile(name string) ([]byte, error) {
	f, err := m.OpenFile(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f)
}

func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mkdirAllLocked(filepath.Clean(dir), false)
	return nil
}

func (m *Mem) Mkdir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.dirs[dir] || m.files[dir] != nil:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
	case !m.dirs[filepath.Dir(dir)]:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrNotExist}
	}
	m.mkdirAllLocked(dir, false)
	return nil
}

func (m *Mem) List(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for name := range m.files {
		if filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			names = append(names, filepath.Base(d))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (m *Mem) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.files[name]; n != nil {
		n.mu.Lock()
		m.grow(-int64(len(n.data)))
		n.mu.Unlock()
		delete(m.files, name)
		if !m.strict {
			delete(m.durableFiles, name)
		}
		return nil
	}
	if m.dirs[name] {
		for other := range m.files {
			if strings.HasPrefix(other, name+"/") {
				return &fs.PathError{Op: "remove", Path: name, Err: unix.ENOTEMPTY}
			}
		}
		for d := range m.dirs {
			if strings.HasPrefix(d, name+"/") {
				return &fs.PathError{Op: "remove", Path: name, Err: unix.ENOTEMPTY}
			}
		}
		delete(m.dirs, name)
		if !m.strict {
			delete(m.durableDirs, name)
		}
	}
	return nil
}

func (m *Mem) RemoveAll(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	under := func(p string) bool { return p == name || strings.HasPrefix(p, name+"/") }
	for p, n := range m.files {
		if under(p) {
			n.mu.Lock()
			m.grow(-int64(len(n.data)))
			n.mu.Unlock()
			delete(m.files, p)
			if !m.strict {
				delete(m.durableFiles, p)
			}
		}
	}
	for d := range m.dirs {
		if under(d) {
			delete(m.dirs, d)
			if !m.strict {
				delete(m.durableDirs, d)
			}
		}
	}
	return nil
}

func (m *Mem) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.files[oldname]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.dirs[filepath.Dir(newname)] {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if old := m.files[newname]; old != nil && old != n {
		old.mu.Lock()
		m.grow(-int64(len(old.data)))
		old.mu.Unlock()
	}
	m.files[newname] = n
	delete(m.files, oldname)
	if !m.strict {
		m.durableFiles[newname] = n
		delete(m.durableFiles, oldname)
	}
	return nil
}

// SyncDir makes dir's current entries (files and subdirectories) its durable ones.
func (m *Mem) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	for name := range m.durableFiles {
		if filepath.Dir(name) == dir && m.files[name] == nil {
			delete(m.durableFiles, name)
		}
	}
	for name, n := range m.files {
		if filepath.Dir(name) == dir {
			m.durableFiles[name] = n
		}
	}
	for d := range m.durableDirs {
		if d != dir && filepath.Dir(d) == dir && !m.dirs[d] {
			delete(m.durableDirs, d)
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			m.durableDirs[d] = true
		}
	}
	return nil
}

// SyncFS syncs every file (names too, as syncfs(2) commits the file
// system's journal), or nothing after SetSyncFSNoop(true).
func (m *Mem) SyncFS(string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.syncFSNoop {
		return nil
	}
	for _, n := range m.files {
		n.mu.Lock()
		n.durable = append(n.durable[:0], n.data...)
		n.mu.Unlock()
	}
	m.durableFiles = make(map[string]*memNode, len(m.files))
	for name, n := range m.files {
		m.durableFiles[name] = n
	}
	m.durableDirs = make(map[string]bool, len(m.dirs))
	for d := range m.dirs {
		m.durableDirs[d] = true
	}
	return nil
}

func (m *Mem) Device(string) (uint64, error) { return 1, nil }

type memHandle struct {
	m      *Mem
	n      *memNode
	name   string
	flag   int
	pos    int64
	mu     sync.Mutex // pos, closed
	closed bool
}

func (h *memHandle) writable() bool { return h.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

func (h *memHandle) check(write bool) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	switch {
	case closed:
		return &fs.PathError{Op: "use", Path: h.name, Err: os.ErrClosed}
	case write && !h.writable():
		return &fs.PathError{Op: "write", Path: h.name, Err: unix.EBADF}
	}
	return nil
}

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	if err := h.check(false); err != nil {
		return 0, err
	}
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	if off >= int64(len(h.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeAt writes p at off (extending with zeros), charging new bytes to the
// capacity; a write that does not fit writes what does and fails with ENOSPC.
func (h *memHandle) writeAt(p []byte, off int64) (int, error) {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	end := off + int64(len(p))
	var err error
	if grow := end - int64(len(h.n.data)); grow > 0 {
		got := h.m.grow(grow)
		if got < grow {
			end = int64(len(h.n.data)) + got
			p = p[:max(0, end-off)]
			err = &fs.PathError{Op: "write", Path: h.name, Err: unix.ENOSPC}
		}
		if end > int64(len(h.n.data)) {
			h.n.data = append(h.n.data, make([]byte, end-int64(len(h.n.data)))...)
		}
	}
	n := copy(h.n.data[off:], p)
	return n, err
}

func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	if err := h.check(true); err != nil {
		return 0, err
	}
	if h.flag&os.O_APPEND != 0 {
		return 0, &fs.PathError{Op: "writeat", Path: h.name, Err: fmt.Errorf("os: invalid use of WriteAt on file opened with O_APPEND")}
	}
	return h.writeAt(p, off)
}

func (h *memHandle) Write(p []byte) (int, error) {
	if err := h.check(true); err != nil {
		return 0, err
	}
	if h.flag&os.O_APPEND != 0 {
		h.n.mu.Lock()
		off := int64(len(h.n.data))
		h.n.mu.Unlock()
		return h.writeAt(p, off)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.writeAt(p, h.pos)
	h.pos += int64(n)
	return n, err
}

func (h *memHandle) Sync() error {
	if err := h.check(false); err != nil {
		return err
	}
	h.n.mu.Lock()
	h.n.durable = append(h.n.durable[:0], h.n.data...)
	h.n.mu.Unlock()
	return nil
}

func (h *memHandle) Truncate(size int64) error {
	if err := h.check(true); err != nil {
		return err
	}
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	cur := int64(len(h.n.data))
	if size <= cur {
		h.m.grow(size - cur)
		h.n.data = h.n.data[:size]
		return nil
	}
	if got := h.m.grow(size - cur); got < size-cur {
		h.m.grow(-got)
		return &fs.PathError{Op: "truncate", Path: h.name, Err: unix.ENOSPC}
	}
	h.n.data = append(h.n.data, make([]byte, size-cur)...)
	return nil
}

func (h *memHandle) Size() (int64, error) {
	if err := h.check(false); err != nil {
		return 0, err
	}
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	return int64(len(h.n.data)), nil
}

func (h *memHandle) Allocate(off, n int64) error { return h.check(true) }

func (h *memHandle) Name() string { return h.name }

func (h *memHandle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return &fs.PathError{Op: "close", Path: h.name, Err: os.ErrClosed}
	}
	h.closed = true
	return nil
}

type memMapping struct{ h *memHandle }

func (mm *memMapping) Size() (int64, error) { return mm.h.Size() }

// Map hands out a slice of the file's own bytes: writes through it are the
// file's contents, as with MAP_SHARED.
func (mm *memMapping) Map(size int64) ([]byte, error) {
	if err := mm.h.Truncate(size); err != nil {
		return nil, err
	}
	n := mm.h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	// A fresh array, so views handed out earlier stop aliasing the file
	// (they are invalid after Map, as after a real remap).
	n.data = append([]byte(nil), n.data...)
	return n.data, nil
}

func (mm *memMapping) Close() error { return mm.h.Close() }

// Lock holds name in a set; a second Lock of the same name fails until the
// first is closed. Crash drops every lock (the process died).
func (m *Mem) Lock(name string) (io.Closer, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks == nil {
		m.locks = map[string]bool{}
	}
	if m.locks[name] {
		return nil, fmt.Errorf("%s: %w", name, ErrLocked)
	}
	m.locks[name] = true
	return memLock{m, name}, nil
}

type memLock struct {
	m    *Mem
	name string
}

func (l memLock) Close() error {
	l.m.mu.Lock()
	delete(l.m.locks, l.name)
	l.m.mu.Unlock()
	return nil
}
