package smallfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/vfs"
)

// FS is a vfs.FS whose directories directly under Parent made with Mkdir
// (while Small is on) or attached with Attach are virtual.
type FS struct {
	real   vfs.FS
	parent string
	el     *entrylog.Log
	mem    *vfs.Mem

	mu   sync.RWMutex
	dirs map[string]*vdir
	// small: Mkdir under parent makes a virtual directory.
	small bool

	devOnce sync.Once // Parent's device, for Device
	dev     uint64
	devErr  error
}

// vdir is one virtual directory: its partition id and its segment files.
type vdir struct {
	id   [16]byte
	segs map[string]*vseg // by base name
	// real: Materialize gave it a real directory; segs holds the files
	// still open through the seam (forwarded to the real ones), mem the
	// caches written before, every other name is the real directory's.
	real bool
}

// New returns an FS over real in which directories made under parent are
// virtual, their segments homed in el.
func New(real vfs.FS, parent string, el *entrylog.Log) *FS {
	return &FS{real: real, parent: filepath.Clean(parent), el: el, mem: vfs.NewMem(), dirs: map[string]*vdir{}, small: true}
}

// SetSmall turns virtual directories for new partitions on or off (off:
// Mkdir makes real directories, as without this seam).
func (f *FS) SetSmall(on bool) {
	f.mu.Lock()
	f.small = on
	f.mu.Unlock()
}

// IsVirtual reports whether dir is a virtual directory.
func (f *FS) IsVirtual(dir string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	vd := f.dirs[filepath.Clean(dir)]
	return vd != nil && !vd.real
}

// dirOf returns the virtual directory holding name (a file in it), or nil.
func (f *FS) dirOf(name string) (*vdir, string) {
	name = filepath.Clean(name)
	d := filepath.Dir(name)
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.dirs[d], name
}

// idOf parses a partition directory's name (its UUID) into its id.
func idOf(dir string) ([16]byte, error) {
	var id [16]byte
	s := strings.ReplaceAll(filepath.Base(dir), "-", "")
	if len(s) != 32 {
		return id, fmt.Errorf("smallfs: %s: not a partition id", dir)
	}
	for i := range id {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return id, fmt.Errorf("smallfs: %s: not a partition id", dir)
		}
		id[i] = byte(v)
	}
	return id, nil
}

// Attach makes dir virtual with the segments the entry log holds for its
// partition (start-up: a registered partition without a real directory).
// The segment file is named by its first extent's base offset (1 when it
// has none: an empty log).
//
// Errors: dir is not under Parent or not named by a partition id; the
// extents are not contiguous (ErrCorrupt of package entrylog, wrapped).
func (f *FS) Attach(dir string) error {
	dir = filepath.Clean(dir)
	if filepath.Dir(dir) != f.parent {
		return fmt.Errorf("smallfs: %s is not under %s", dir, f.parent)
	}
	id, err := idOf(dir)
	if err != nil {
		return err
	}
	exts := f.el.Extents(id)
	vd := &vdir{id: id, segs: map[string]*vseg{}}
	if len(exts) > 0 {
		s := &vseg{fs: f, id: id}
		for i, e := range exts {
			if i > 0 && e.Base != exts[i-1].Next() {
				return fmt.Errorf("smallfs: %s: segments at %d then %d: %w", dir, exts[i-1].Next(), e.Base, entrylog.ErrCorrupt)
			}
			size := int64(e.Size) - recordHeader - 17
			s.homed = append(s.homed, hext{start: s.homedSize, size: size, base: e.Base, next: e.Next()})
			s.homedSize += size
		}
		vd.segs[segName(exts[0].Base)] = s
	}
	if err := f.mem.MkdirAll(dir); err != nil {
		return err
	}
	f.mu.Lock()
	f.dirs[dir] = vd
	f.mu.Unlock()
	return nil
}

// recordHeader is package record's frame header: an extent's Size less it
// and the entry's kind and id is the segment's length.
const recordHeader = 16

func segName(base uint64) string { return fmt.Sprintf("%020d.seg", base) }

func isSeg(name string) bool { return strings.HasSuffix(name, ".seg") }

// OpenFile implements vfs.FS.
func (f *FS) OpenFile(name string, flag int) (vfs.File, error) {
	vd, name := f.dirOf(name)
	if vd == nil {
		return f.real.OpenFile(name, flag)
	}
	base := filepath.Base(name)
	if vd.real {
		f.mu.Lock()
		s := vd.segs[base]
		if s != nil {
			s.opens++
			f.mu.Unlock()
			return &handle{s: s, name: name, flag: flag, vd: vd, base: base}, nil
		}
		f.mu.Unlock()
		if ok, _ := vfs.Exists(f.mem, name); ok {
			return f.mem.OpenFile(name, flag)
		}
		return f.real.OpenFile(name, flag)
	}
	if !isSeg(base) {
		return f.mem.OpenFile(name, flag)
	}
	f.mu.Lock()
	s := vd.segs[base]
	switch {
	case s == nil && flag&os.O_CREATE == 0:
		f.mu.Unlock()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case s != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		f.mu.Unlock()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case s == nil:
		if len(vd.segs) > 0 {
			// A virtual directory holds one segment file: a rotation
			// means the partition is past any small threshold.
			f.mu.Unlock()
			return nil, fmt.Errorf("smallfs: %s: a second segment file in a virtual directory", name)
		}
		s = &vseg{fs: f, id: vd.id}
		vd.segs[base] = s
	}
	s.opens++
	f.mu.Unlock()
	h := &handle{s: s, name: name, flag: flag, vd: vd, base: base}
	if flag&os.O_TRUNC != 0 {
		if err := h.Truncate(0); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// OpenMapped implements vfs.FS (index files of a virtual directory in memory).
func (f *FS) OpenMapped(name string) (vfs.Mapping, error) {
	if vd, name := f.dirOf(name); vd != nil {
		if ok, _ := vfs.Exists(f.mem, name); !vd.real || ok {
			return f.mem.OpenMapped(name)
		}
	}
	return f.real.OpenMapped(name)
}

// ReadFile implements vfs.FS.
func (f *FS) ReadFile(name string) ([]byte, error) {
	vd, name := f.dirOf(name)
	if vd == nil {
		return f.real.ReadFile(name)
	}
	if vd.real {
		if ok, _ := vfs.Exists(f.mem, name); ok {
			return f.mem.ReadFile(name)
		}
		return f.real.ReadFile(name)
	}
	if !isSeg(name) {
		return f.mem.ReadFile(name)
	}
	h, err := f.OpenFile(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return vfs.ReadAll(h)
}

// MkdirAll implements vfs.FS (a virtual directory exists already).
func (f *FS) MkdirAll(dir string) error {
	if f.IsVirtual(dir) {
		return nil
	}
	return f.real.MkdirAll(dir)
}

// Mkdir implements vfs.FS: directly under Parent, while small is on, it
// makes a virtual directory (no inode).
func (f *FS) Mkdir(dir string) error {
	dir = filepath.Clean(dir)
	f.mu.Lock()
	if f.dirs[dir] != nil {
		f.mu.Unlock()
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
	}
	small := f.small
	f.mu.Unlock()
	if !small || filepath.Dir(dir) != f.parent {
		return f.real.Mkdir(dir)
	}
	id, err := idOf(dir)
	if err != nil {
		return f.real.Mkdir(dir)
	}
	// No look at the real directory: a new partition's id is new (a
	// UUIDv7), and start-up attaches the ones that exist (Attach). A
	// lookup costs a path walk per creation (issue 23's profile).
	if err := f.mem.MkdirAll(dir); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirs[dir] != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
	}
	f.dirs[dir] = &vdir{id: id, segs: map[string]*vseg{}}
	return nil
}

// List implements vfs.FS: a virtual directory's names, and Parent's real
// names with the virtual directories'.
func (f *FS) List(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	f.mu.RLock()
	vd := f.dirs[dir]
	var extra []string
	if dir == f.parent {
		for d := range f.dirs {
			extra = append(extra, filepath.Base(d))
		}
	}
	var segs []string
	if vd != nil {
		for n := range vd.segs {
			segs = append(segs, n)
		}
	}
	f.mu.RUnlock()
	if vd != nil {
		names, err := f.mem.List(dir)
		if err != nil {
			return nil, err
		}
		if vd.real {
			rn, err := f.real.List(dir)
			if err != nil {
				return nil, err
			}
			segs = rn
		}
		names = append(names, segs...)
		slices.Sort(names)
		return slices.Compact(names), nil
	}
	names, err := f.real.List(dir)
	if err != nil && !(len(extra) > 0 && errors.Is(err, fs.ErrNotExist)) {
		return nil, err
	}
	names = append(names, extra...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Remove implements vfs.FS. Removing a virtual segment file trims its
// records from the entry log; an empty virtual directory is forgotten.
func (f *FS) Remove(name string) error {
	name = filepath.Clean(name)
	f.mu.Lock()
	if vd := f.dirs[name]; vd != nil {
		defer f.mu.Unlock()
		if len(vd.segs) > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
		}
		delete(f.dirs, name)
		return f.mem.RemoveAll(name)
	}
	vd := f.dirs[filepath.Dir(name)]
	if vd == nil {
		f.mu.Unlock()
		return f.real.Remove(name)
	}
	if vd.real {
		f.mu.Unlock()
		if ok, _ := vfs.Exists(f.mem, name); ok {
			return f.mem.Remove(name)
		}
		return f.real.Remove(name)
	}
	s := vd.segs[filepath.Base(name)]
	if s == nil {
		f.mu.Unlock()
		return f.mem.Remove(name)
	}
	delete(vd.segs, filepath.Base(name))
	f.mu.Unlock()
	return f.el.Trim(vd.id, s.end())
}

// RemoveAll implements vfs.FS. A virtual directory's records are dropped
// from the entry log (a trim frame, durable with its next Sync).
func (f *FS) RemoveAll(name string) error {
	name = filepath.Clean(name)
	f.mu.Lock()
	vd := f.dirs[name]
	delete(f.dirs, name)
	f.mu.Unlock()
	if vd == nil {
		return f.real.RemoveAll(name)
	}
	if err := f.mem.RemoveAll(name); err != nil {
		return err
	}
	if vd.real {
		return f.real.RemoveAll(name)
	}
	return f.el.Trim(vd.id, entrylog.Dropped)
}

// Rename implements vfs.FS: inside one virtual directory, of its in-memory
// files only.
func (f *FS) Rename(oldname, newname string) error {
	vo, oldname := f.dirOf(oldname)
	vn, newname := f.dirOf(newname)
	switch {
	case vo == nil && vn == nil, vo != nil && vo == vn && vo.real && !memHas(f.mem, oldname):
		return f.real.Rename(oldname, newname)
	case vo != vn || isSeg(oldname) || isSeg(newname):
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.New("smallfs: not within a virtual directory's caches")}
	}
	return f.mem.Rename(oldname, newname)
}

// memHas reports whether the in-memory twin holds name.
func memHas(m *vfs.Mem, name string) bool {
	ok, _ := vfs.Exists(m, name)
	return ok
}

// SyncDir implements vfs.FS: a virtual directory has nothing to sync (its
// existence is the registry's).
func (f *FS) SyncDir(dir string) error {
	if f.IsVirtual(dir) {
		return nil
	}
	return f.real.SyncDir(dir)
}

// SyncFS implements vfs.FS.
func (f *FS) SyncFS(dir string) error {
	if f.IsVirtual(dir) {
		dir = f.parent
	}
	return f.real.SyncFS(dir)
}

// Device implements vfs.FS: a virtual directory is on Parent's device
// (looked up once: segment.Create asks for every new partition).
func (f *FS) Device(dir string) (uint64, error) {
	if !f.IsVirtual(dir) {
		return f.real.Device(dir)
	}
	f.devOnce.Do(func() { f.dev, f.devErr = f.real.Device(f.parent) })
	return f.dev, f.devErr
}

// Lock implements vfs.FS.
func (f *FS) Lock(name string) (io.Closer, error) { return f.real.Lock(name) }

var _ vfs.FS = (*FS)(nil)
