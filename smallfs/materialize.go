package smallfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/combmq/comb/entrylog"
)

// TmpSuffix ends the name of a segment file Materialize is writing into a
// partition's new real directory: a directory without a ".seg" file is one
// whose materialization a crash interrupted (its records are still in the
// entry log), which start-up removes.
const TmpSuffix = ".small-tmp"

// Materialize gives virtual directory dir its own real directory: dir is
// made, the in-memory files named by keep (the DESCRIPTOR) are written and
// synced, each segment file (every byte, homed and in memory) is written
// under its name plus TmpSuffix, synced and renamed into place, then the
// directory and its parent are synced. Open handles of its segment files
// then read and write the real files, and the entry log's copies are trimmed
// (durable with its next Sync; at start-up a directory holding a segment
// file wins over them). The caller keeps appends out (the partition lock);
// reads wait on the segment files' locks.
//
// Errors: dir is not virtual; the file system's (dir stays virtual and what
// was written is removed, or, after a crash, a directory without a segment
// file, which start-up removes).
func (f *FS) Materialize(dir string, keep []string) error {
	dir = filepath.Clean(dir)
	f.mu.Lock()
	vd := f.dirs[dir]
	f.mu.Unlock()
	if vd == nil || vd.real {
		return fmt.Errorf("smallfs: %s is not a virtual directory", dir)
	}
	segs := make(map[string]*vseg, len(vd.segs))
	f.mu.RLock()
	for n, s := range vd.segs {
		segs[n] = s
	}
	f.mu.RUnlock()
	for _, s := range segs {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	if err := f.writeReal(dir, segs, keep); err != nil {
		_ = f.real.RemoveAll(dir)
		return err
	}
	for name, s := range segs {
		rf, err := f.real.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_APPEND)
		if err != nil {
			return fmt.Errorf("smallfs: %w", err)
		}
		s.real, s.homed, s.homedSize, s.tail, s.last = rf, nil, 0, nil, nil
	}
	f.mu.Lock()
	vd.real = true
	var idle []*vseg
	for name, s := range vd.segs {
		if s.opens == 0 { // no handle will close it
			idle = append(idle, s)
			delete(vd.segs, name)
		}
	}
	f.mu.Unlock()
	for _, s := range idle {
		_ = s.real.Close()
		s.real = nil
	}
	return f.el.Trim(vd.id, entrylog.Dropped)
}

// writeReal writes dir's keep files and segment files into a new real dir, synced.
func (f *FS) writeReal(dir string, segs map[string]*vseg, keep []string) error {
	if err := f.real.Mkdir(dir); err != nil {
		return fmt.Errorf("smallfs: %w", err)
	}
	write := func(name string, data []byte) error {
		out, err := f.real.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	for _, name := range keep {
		data, err := f.mem.ReadFile(filepath.Join(dir, name))
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return fmt.Errorf("smallfs: %w", err)
		}
		if err := write(name, data); err != nil {
			return fmt.Errorf("smallfs: %s: %w", name, err)
		}
	}
	for name, s := range segs {
		data := make([]byte, s.size())
		if _, err := s.readAtLocked(data, 0); err != nil {
			return fmt.Errorf("smallfs: %s: read: %w", name, err)
		}
		if err := write(name+TmpSuffix, data); err != nil {
			return fmt.Errorf("smallfs: %s: %w", name, err)
		}
		if err := f.real.Rename(filepath.Join(dir, name+TmpSuffix), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("smallfs: %w", err)
		}
	}
	if err := f.real.SyncDir(dir); err != nil {
		return fmt.Errorf("smallfs: %w", err)
	}
	if err := f.real.SyncDir(f.parent); err != nil {
		return fmt.Errorf("smallfs: %w", err)
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
