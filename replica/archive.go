package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The archive of a data directory that a snapshot carries to a node that
// lacks the state (snapshot_install.go): after the marker, one record per
// file, to the end of the snapshot:
//
//	+-------------+----------+-------------+---------+-------------------+
//	| path length | path     | size        | present | size bytes        |
//	| u16 BE      | relative | u64 BE      | u8 0/1  | the file, or zero |
//	+-------------+----------+-------------+---------+-------------------+
//
// The path is relative to the data directory, with '/' separators, never
// absolute nor climbing out ("..": refused). Raft needs the snapshot's size
// before it streams it, so each file's size is fixed when the archive is
// planned; a file gone by the time it is read (retention removed it) is sent
// as size zero bytes with present 0 and skipped by the receiver.

// ErrBadArchive: a snapshot archive that does not decode.
var ErrBadArchive = errors.New("replica: bad snapshot archive")

// archiveFile is one file of a planned archive: where to read it and how
// many bytes to send.
type archiveFile struct {
	rel  string // relative to the data directory, '/'-separated
	path string // where to read it now
	size int64
}

const archiveHeaderBytes = 2 + 8 + 1

// archiveSize is the exact byte count archiveReader produces for files.
func archiveSize(files []archiveFile) int64 {
	var n int64
	for _, f := range files {
		n += archiveHeaderBytes + int64(len(f.rel)) + f.size
	}
	return n
}

// archiveReader streams files as an archive, opening each when it is
// reached; release runs once, at Close.
type archiveReader struct {
	files   []archiveFile
	i       int
	head    []byte    // the current record's header, still to send
	body    io.Reader // the current record's bytes, still to send
	cur     *os.File
	release func()
}

func (a *archiveReader) Read(p []byte) (int, error) {
	for {
		if len(a.head) > 0 {
			n := copy(p, a.head)
			a.head = a.head[n:]
			return n, nil
		}
		if a.body != nil {
			n, err := a.body.Read(p)
			if err == io.EOF {
				a.closeCurrent()
				if n > 0 {
					return n, nil
				}
				continue
			}
			return n, err
		}
		if a.i == len(a.files) {
			return 0, io.EOF
		}
		a.next()
	}
}

// next sets up the record of files[i]: its header, and its bytes from the
// file (cut or zero-padded to its planned size) or zeros when it is gone.
func (a *archiveReader) next() {
	f := a.files[a.i]
	a.i++
	present := byte(1)
	fh, err := os.Open(f.path)
	if err != nil {
		present = 0
	}
	h := make([]byte, 0, archiveHeaderBytes+len(f.rel))
	h = binary.BigEndian.AppendUint16(h, uint16(len(f.rel)))
	h = append(h, f.rel...)
	h = binary.BigEndian.AppendUint64(h, uint64(f.size))
	h = append(h, present)
	a.head = h
	if present == 0 {
		a.body = io.LimitReader(zeroReader{}, f.size)
		return
	}
	a.cur = fh
	// A file shorter than planned cannot be (the plan's files are append-
	// only or hard links), but the size must hold: pad it.
	a.body = io.LimitReader(io.MultiReader(fh, zeroReader{}), f.size)
}

func (a *archiveReader) closeCurrent() {
	if a.cur != nil {
		a.cur.Close()
		a.cur = nil
	}
	a.body = nil
}

func (a *archiveReader) Close() error {
	a.closeCurrent()
	if a.release != nil {
		a.release()
		a.release = nil
	}
	return nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// extractArchive writes the archive r holds into dir (which must exist),
// fsyncing every file and directory it makes. It reads r to its end.
//
// Errors: ErrBadArchive for a record that does not decode or a path that is
// absolute or climbs out of dir; file system errors wrapped with the path.
func extractArchive(r io.Reader, dir string) error {
	made := map[string]bool{dir: true}
	var h [archiveHeaderBytes - 2]byte // size and present, after the path
	for {
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			if err == io.EOF {
				break
			}
			return fmt.Errorf("%w: record header: %v", ErrBadArchive, err)
		}
		name := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(r, name); err != nil {
			return fmt.Errorf("%w: path: %v", ErrBadArchive, err)
		}
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return fmt.Errorf("%w: %s: size: %v", ErrBadArchive, name, err)
		}
		size := int64(binary.BigEndian.Uint64(h[:8]))
		present := h[8]
		rel, ok := cleanRel(string(name))
		if !ok || size < 0 || present > 1 {
			return fmt.Errorf("%w: record %q (size %d, present %d)", ErrBadArchive, name, size, present)
		}
		if present == 0 {
			if _, err := io.CopyN(io.Discard, r, size); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrBadArchive, rel, err)
			}
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := makeDirs(filepath.Dir(path), made); err != nil {
			return err
		}
		if err := writeFileFrom(path, r, size); err != nil {
			return err
		}
	}
	for d := range made {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// cleanRel accepts a relative, '/'-separated path that stays inside its
// root.
func cleanRel(p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", false
	}
	c := filepath.ToSlash(filepath.Clean(filepath.FromSlash(p)))
	if c != p || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

func makeDirs(d string, made map[string]bool) error {
	if made[d] {
		return nil
	}
	if err := makeDirs(filepath.Dir(d), made); err != nil {
		return err
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("replica: %w", err)
	}
	made[d] = true
	return nil
}

func writeFileFrom(path string, r io.Reader, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s: %v", ErrBadArchive, path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("replica: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return nil
}

func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("replica: sync %s: %w", d, err)
	}
	return nil
}
