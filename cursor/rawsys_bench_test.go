package cursor

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
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

// BenchmarkStopTheWorldDuringSlowSync measures what a slow fdatasync costs
// the rest of the process: one goroutine dirties 16 MiB with an ordinary
// write and syncs it through the mode's File in a loop (a sync that takes as
// long as a small one does on a slow or busy disk), while the benchmark times
// runtime.GC(), whose stop-the-world phases must stop every P. A P held in a
// raw syscall cannot be stopped until the syscall returns; a P in an
// ordinary syscall is taken at once. Reports the median and worst GC time.
func BenchmarkStopTheWorldDuringSlowSync(b *testing.B) {
	for _, mode := range syscallModes {
		b.Run(mode.name, func(b *testing.B) {
			f, err := mode.fs.OpenFile(filepath.Join(b.TempDir(), "big"), os.O_RDWR|os.O_CREATE)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 16<<20)
			for i := range buf {
				buf[i] = byte(i)
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			var syncs atomic.Int64
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Dirty the pages with an ordinary write in both modes:
					// only the sync differs.
					w := f
					if rf, ok := f.(rawFile); ok {
						w = rf.File
					}
					if _, err := w.WriteAt(buf, 0); err != nil {
						b.Error(err)
						return
					}
					if err := f.Sync(); err != nil {
						b.Error(err)
						return
					}
					syncs.Add(1)
				}
			}()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				runtime.GC()
				lat = append(lat, time.Since(t0))
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			close(stop)
			<-done
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-gc-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-gc-ms")
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "syncs/gc")
		})
	}
}
