package cursor

import (
	"io"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
)

// rawFS is vfs.OS with the journal's pwrite and fdatasync made with
// RawSyscall, which keeps the goroutine's scheduler P for the whole call (the
// writer's syscalls before format 2). It exists for the benchmarks that
// compare it with the ordinary syscalls the writer uses now
// (docs/benchmarks.md, "Raw or ordinary syscalls for the cursor writer").
type rawFS struct{ vfs.FS }

func (r rawFS) OpenFile(name string, flag int) (vfs.File, error) {
	f, err := r.FS.OpenFile(name, flag)
	if err != nil {
		return nil, err
	}
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		return rawFile{File: f, fd: int(fd.Fd())}, nil
	}
	return f, nil
}

type rawFile struct {
	vfs.File
	fd int
}

func (f rawFile) WriteAt(b []byte, off int64) (int, error) {
	n := 0
	for len(b) > 0 {
		w, _, errno := unix.RawSyscall6(unix.SYS_PWRITE64, uintptr(f.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		switch {
		case errno == unix.EINTR || errno == unix.EAGAIN:
			continue
		case errno != 0:
			return n, errno
		case w == 0:
			return n, io.ErrShortWrite
		}
		b = b[w:]
		off += int64(w)
		n += int(w)
	}
	return n, nil
}

func (f rawFile) Sync() error {
	if _, _, errno := unix.RawSyscall(unix.SYS_FDATASYNC, uintptr(f.fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// syscallModes are the two ways the benchmarks run the writer.
var syscallModes = []struct {
	name string
	fs   vfs.FS
}{{"syscalls=ordinary", vfs.OS}, {"syscalls=raw", rawFS{vfs.OS}}}
