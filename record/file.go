package record

import (
	"fmt"

	"github.com/combmq/comb/vfs"
)

// WriteFile replaces name with one frame holding body, atomically (see
// vfs.WriteFileAtomic): after a crash name holds the old frame or the new
// one. noSync skips the syncs (tests and benchmarks only).
//
// Errors: ErrEmpty, ErrTooLarge, or the file system's, wrapped with the path.
func (f Format) WriteFile(fsys vfs.FS, name string, body []byte, noSync bool) error {
	b, err := f.Append(nil, body)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return vfs.WriteFileAtomic(fsys, name, b, noSync)
}

// ReadFile returns the body of the one-frame file name.
//
// Errors: the file system's (fs.ErrNotExist for a missing file), or
// ErrShort, ErrZero, ErrHeader, ErrChecksum for a damaged file, or ErrHeader
// when bytes follow the frame; all wrapped with the path.
func (f Format) ReadFile(fsys vfs.FS, name string) ([]byte, error) {
	b, err := fsys.ReadFile(name)
	if err != nil {
		return nil, err
	}
	body, n, err := f.Next(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%w: %d bytes after the frame", ErrHeader, len(b)-n)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return body, nil
}
