package segment

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/combmq/comb/index"
)

// memFS is the in-memory twin of osFS for tests. Crash returns the state a
// machine would come back with after a power loss: every file holds exactly
// the bytes it held at its last Sync (files never synced come back empty),
// while mapped index files keep their latest contents (their pages may have
// been written back at any time; keepIndexes=false drops them instead).
type memFS struct {
	mu    sync.Mutex
	files map[string]*memFile
	dirs  map[string]bool
}

type memFile struct {
	mu      sync.Mutex
	data    []byte
	durable []byte
	mapped  bool
}

func newMemFS() *memFS { return &memFS{files: map[string]*memFile{}, dirs: map[string]bool{}} }

// Crash returns a new memFS holding what survives a power loss now.
func (m *memFS) Crash(keepIndexes bool) *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := newMemFS()
	for d := range m.dirs {
		out.dirs[d] = true
	}
	for name, f := range m.files {
		f.mu.Lock()
		var data []byte
		switch {
		case f.mapped && keepIndexes:
			data = append([]byte(nil), f.data...)
		case f.mapped:
			data = nil
		default:
			data = append([]byte(nil), f.durable...)
		}
		f.mu.Unlock()
		out.files[name] = &memFile{data: data, durable: append([]byte(nil), data...), mapped: f.mapped}
	}
	return out
}

// bytes returns a copy of a file's current contents (tests).
func (m *memFS) bytes(name string) []byte {
	m.mu.Lock()
	f := m.files[name]
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.data...)
}

// setBytes replaces a file's contents, durably (tests).
func (m *memFS) setBytes(name string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = &memFile{data: append([]byte(nil), b...), durable: append([]byte(nil), b...)}
}

func (m *memFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[filepath.Clean(dir)] = true
	return nil
}

func (m *memFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if !m.dirs[dir] {
		return nil, fmt.Errorf("list %s: %w", dir, fs.ErrNotExist)
	}
	var names []string
	for name := range m.files {
		if filepath.Dir(name) == dir {
			names = append(names, strings.TrimPrefix(name, dir+"/"))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (m *memFS) get(name string, create, mapped bool) (*memFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	f := m.files[name]
	if f == nil {
		if !create {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		f = &memFile{mapped: mapped}
		m.files[name] = f
	}
	return f, nil
}

func (m *memFS) OpenFile(name string, create bool) (file, error) {
	f, err := m.get(name, create, false)
	if err != nil {
		return nil, err
	}
	return &memHandle{f: f}, nil
}

func (m *memFS) OpenIndex(name string) (index.Backing, error) {
	f, err := m.get(name, true, true)
	if err != nil {
		return nil, err
	}
	return &memBacking{f: f}, nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, filepath.Clean(name))
	return nil
}

func (m *memFS) SyncDir(string) error { return nil }

func (m *memFS) SyncFS(string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.files {
		f.mu.Lock()
		f.durable = append(f.durable[:0], f.data...)
		f.mu.Unlock()
	}
	return nil
}

func (m *memFS) Device(string) (uint64, error) { return 1, nil }

type memHandle struct {
	f      *memFile
	closed bool
}

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if off >= int64(len(h.f.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) Write(p []byte) (int, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.data = append(h.f.data, p...)
	return len(p), nil
}

func (h *memHandle) Sync() error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.durable = append(h.f.durable[:0], h.f.data...)
	return nil
}

func (h *memHandle) Truncate(size int64) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if size < int64(len(h.f.data)) {
		h.f.data = h.f.data[:size]
	} else {
		h.f.data = append(h.f.data, make([]byte, size-int64(len(h.f.data)))...)
	}
	return nil
}

func (h *memHandle) Size() (int64, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return int64(len(h.f.data)), nil
}

func (h *memHandle) Close() error { h.closed = true; return nil }

type memBacking struct{ f *memFile }

func (b *memBacking) Size() (int64, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	return int64(len(b.f.data)), nil
}

// Map hands out the file's own bytes: writes through the view are the file's
// contents, as with MAP_SHARED.
func (b *memBacking) Map(size int64) ([]byte, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	nd := make([]byte, size)
	copy(nd, b.f.data)
	b.f.data = nd
	return nd, nil
}

func (b *memBacking) Close() error { return nil }
