package errorfs

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
)

// Op names a kind of call through the seam: the failpoints of FS.
type Op string

// The failpoints. Every call that changes the disk is one of the first nine;
// OpRead covers ReadAt, ReadFile and List.
const (
	OpOpen     Op = "open"     // OpenFile and OpenMapped
	OpWrite    Op = "write"    // File.Write and File.WriteAt
	OpSync     Op = "sync"     // File.Sync (fdatasync)
	OpTruncate Op = "truncate" // File.Truncate
	OpMap      Op = "map"      // Mapping.Map (resizes the file)
	OpMkdir    Op = "mkdir"    // MkdirAll and Mkdir
	OpRemove   Op = "remove"   // Remove and RemoveAll
	OpRename   Op = "rename"   // Rename (the path is the new name)
	OpSyncDir  Op = "syncdir"  // SyncDir and SyncFS
	OpRead     Op = "read"
)

// Fault describes which calls FS fails and how.
type Fault struct {
	Op    Op     // the calls it applies to; "" = every op
	Path  string // exact path of the call ("" = any)
	Under string // the path contains this ("" = any)
	Skip  int    // let the first Skip matching calls through
	Count int    // fail this many matching calls after those; 0 = every later one
	Err   error  // the error (wrapped in *fs.PathError); nil = EIO
	// Short makes a failing write write the first half of its bytes first,
	// as a disk that fills up in the middle of a write does.
	Short bool
}

// Call is one call through FS, as Trace sees it.
type Call struct {
	Op   Op
	Path string
}

// FS wraps a vfs.FS and fails the calls its faults match (the package
// comment). Safe for concurrent use.
type FS struct {
	vfs.FS
	mu     sync.Mutex
	faults []*fault
	trace  []Call
	record bool
}

type fault struct {
	Fault
	seen int
}

// New returns fsys with no fault injected.
func New(fsys vfs.FS) *FS { return &FS{FS: fsys} }

// Inject adds a fault; the returned func removes it.
func (f *FS) Inject(ft Fault) (remove func()) {
	if ft.Err == nil {
		ft.Err = unix.EIO
	}
	x := &fault{Fault: ft}
	f.mu.Lock()
	f.faults = append(f.faults, x)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, y := range f.faults {
			if y == x {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// Clear removes every fault.
func (f *FS) Clear() {
	f.mu.Lock()
	f.faults = nil
	f.mu.Unlock()
}

// Record starts recording every call (Trace returns them in order).
func (f *FS) Record() {
	f.mu.Lock()
	f.record, f.trace = true, nil
	f.mu.Unlock()
}

// Trace returns the calls recorded since Record.
func (f *FS) Trace() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.trace...)
}

// FaultAt returns the Fault that fails exactly trace[i] of a recorded run
// (same op and path, after as many earlier calls with both as the trace
// holds): replaying the same scenario with it fails that one boundary.
func FaultAt(trace []Call, i int, err error) Fault {
	skip := 0
	for _, c := range trace[:i] {
		if c == trace[i] {
			skip++
		}
	}
	return Fault{Op: trace[i].Op, Path: trace[i].Path, Skip: skip, Count: 1, Err: err}
}

// hit reports the fault that fails this call, or nil.
func (f *FS) hit(op Op, path string) *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.record {
		f.trace = append(f.trace, Call{op, path})
	}
	for _, x := range f.faults {
		if x.Op != "" && x.Op != op || x.Path != "" && x.Path != path || x.Under != "" && !strings.Contains(path, x.Under) {
			continue
		}
		x.seen++
		if x.seen <= x.Skip || x.Count > 0 && x.seen > x.Skip+x.Count {
			continue
		}
		return x
	}
	return nil
}

func (f *FS) fail(op Op, path string) error {
	if x := f.hit(op, path); x != nil {
		return &fs.PathError{Op: string(op), Path: path, Err: x.Err}
	}
	return nil
}

func (f *FS) OpenFile(name string, flag int) (vfs.File, error) {
	if err := f.fail(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenFile(name, flag)
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, f: f}, nil
}

func (f *FS) OpenMapped(name string) (vfs.Mapping, error) {
	if err := f.fail(OpOpen, name); err != nil {
		return nil, err
	}
	m, err := f.FS.OpenMapped(name)
	if err != nil {
		return nil, err
	}
	return &faultyMapping{Mapping: m, f: f, name: name}, nil
}

func (f *FS) ReadFile(name string) ([]byte, error) {
	if err := f.fail(OpRead, name); err != nil {
		return nil, err
	}
	return f.FS.ReadFile(name)
}

func (f *FS) List(dir string) ([]string, error) {
	if err := f.fail(OpRead, dir); err != nil {
		return nil, err
	}
	return f.FS.List(dir)
}

func (f *FS) MkdirAll(dir string) error {
	if err := f.fail(OpMkdir, dir); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir)
}

func (f *FS) Mkdir(dir string) error {
	if err := f.fail(OpMkdir, dir); err != nil {
		return err
	}
	return f.FS.Mkdir(dir)
}

func (f *FS) Remove(name string) error {
	if err := f.fail(OpRemove, name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *FS) RemoveAll(name string) error {
	if err := f.fail(OpRemove, name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *FS) Rename(oldname, newname string) error {
	if err := f.fail(OpRename, newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *FS) SyncDir(dir string) error {
	if err := f.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

func (f *FS) SyncFS(dir string) error {
	if err := f.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return f.FS.SyncFS(dir)
}

type faultyFile struct {
	vfs.File
	f *FS
}

func (h *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := h.f.fail(OpRead, h.Name()); err != nil {
		return 0, err
	}
	return h.File.ReadAt(p, off)
}

// short writes the first half of p with write when the fault asks for a
// short write, then returns the fault's error.
func (h *faultyFile) short(x *fault, p []byte, write func([]byte) (int, error)) (int, error) {
	n := 0
	if x.Short && len(p) > 1 {
		n, _ = write(p[:len(p)/2])
	}
	return n, &fs.PathError{Op: string(OpWrite), Path: h.Name(), Err: x.Err}
}

func (h *faultyFile) Write(p []byte) (int, error) {
	if x := h.f.hit(OpWrite, h.Name()); x != nil {
		return h.short(x, p, h.File.Write)
	}
	return h.File.Write(p)
}

func (h *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if x := h.f.hit(OpWrite, h.Name()); x != nil {
		return h.short(x, p, func(b []byte) (int, error) { return h.File.WriteAt(b, off) })
	}
	return h.File.WriteAt(p, off)
}

func (h *faultyFile) Sync() error {
	if err := h.f.fail(OpSync, h.Name()); err != nil {
		return err
	}
	return h.File.Sync()
}

func (h *faultyFile) Truncate(size int64) error {
	if err := h.f.fail(OpTruncate, h.Name()); err != nil {
		return err
	}
	return h.File.Truncate(size)
}

type faultyMapping struct {
	vfs.Mapping
	f    *FS
	name string
}

func (m *faultyMapping) Map(size int64) ([]byte, error) {
	if err := m.f.fail(OpMap, m.name); err != nil {
		return nil, err
	}
	return m.Mapping.Map(size)
}

// FSType is the wrapped FS's (vfs.ErrSyncFSUntrusted when it cannot tell), so
// vfs.SyncFSTrusted judges what is wrapped.
func (f *FS) FSType(dir string) (int64, error) {
	t, ok := f.FS.(vfs.Typed)
	if !ok {
		return 0, fmt.Errorf("%s: cannot tell its file system type: %w", dir, vfs.ErrSyncFSUntrusted)
	}
	return t.FSType(dir)
}
