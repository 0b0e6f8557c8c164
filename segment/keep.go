package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// keepChunk is how many bytes keepCut copies at a time (a torn tail can be
// as long as a segment, up to MaxSegmentBytes).
const keepChunk = 1 << 20

// keepCut copies the bytes of f in [from, size) that a truncation at from
// would cut, up to the last non-zero byte, to a new file
// <quarantine dir>/<name>.from-<from> (".N" added when that name is taken)
// and returns its path; "" when they are all zero (nothing to keep: what a
// crash leaves after an extension that never got its data).
//
// Durability: the copy is fdatasynced and its directory (and any directory
// created for it) synced before keepCut returns, so the caller may cut.
func (l *Log) keepCut(f file, name string, from, size int64) (string, error) {
	end, err := dataEnd(f, from, size)
	if err != nil || end == from {
		return "", err
	}
	dir := l.quarantineDir()
	if err := mkdirDurable(l.fs, dir); err != nil {
		return "", err
	}
	out, path, err := createUnique(l.fs, filepath.Join(dir, fmt.Sprintf("%s.from-%d", name, from)))
	if err != nil {
		return "", err
	}
	buf := make([]byte, min(end-from, keepChunk))
	for at := from; at < end && err == nil; {
		n := min(int64(len(buf)), end-at)
		if _, err = f.ReadAt(buf[:n], at); err == nil {
			_, err = out.Write(buf[:n])
		}
		at += n
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.SyncDir(dir)
	}
	if err != nil {
		_ = l.fs.Remove(path)
		return "", fmt.Errorf("keep bytes %d..%d of %s at %s: %w", from, end, name, path, err)
	}
	return path, nil
}

// quarantineDir is where the log keeps cut bytes (Options.QuarantineDir).
func (l *Log) quarantineDir() string {
	if l.opts.QuarantineDir == "" {
		return l.dir
	}
	return filepath.Join(l.opts.QuarantineDir, filepath.Base(l.dir))
}

// dataEnd returns the position after the last non-zero byte of f in
// [from, size), or from when there is none.
func dataEnd(f io.ReaderAt, from, size int64) (int64, error) {
	buf := make([]byte, min(size-from, keepChunk))
	end := from
	for at := from; at < size; {
		n := min(int64(len(buf)), size-at)
		if k, err := f.ReadAt(buf[:n], at); err != nil && !(errors.Is(err, io.EOF) && int64(k) == n) {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				end = at + i + 1
				break
			}
		}
		at += n
	}
	return end, nil
}

// createUnique creates path, or path.1, path.2, ... when taken, for writing.
func createUnique(fsys fileSystem, path string) (file, string, error) {
	for n := 0; ; n++ {
		p := path
		if n > 0 {
			p = fmt.Sprintf("%s.%d", path, n)
		}
		f, err := fsys.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, p, err
	}
}

// mkdirDurable creates dir and any missing parents and syncs the parent of
// each directory it created, so the new names survive a crash.
func mkdirDurable(fsys fileSystem, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.List(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
