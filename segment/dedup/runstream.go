package dedup

import (
	"fmt"
	"os"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// Streamed run files (issue 23: dedup CPU). Merges and the partition
// filter's rebuilds read run files a few pages at a time (index.RunReader:
// each page verified before an entry of it is used) and merges write theirs
// the same way (index.RunEncoder), instead of reading, decoding, merging and
// encoding whole runs in memory: a merge holds a few pages per run, and no
// id costs fresh memory.

// runFlushBytes is how many encoded bytes a streamed run write gathers
// before it writes them.
const runFlushBytes = 64 << 10

// runReader is a run file open for a streamed read.
type runReader struct {
	*index.RunReader
	f    vfs.File
	name string
}

// openRunReader opens run first..last for a streamed read, reusing buf for
// its reads (nil: a new one). The header must be the one the name gives,
// as CheckRun requires. The caller closes it.
func (d *Index) openRunReader(first, last uint64, buf []byte) (*runReader, error) {
	name := runName(first, last)
	f, err := d.cfg.FS.OpenFile(d.path(name), os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	size, err := f.Size()
	var x *index.RunReader
	if err == nil {
		x, err = index.NewRunReader(f, size, buf)
	}
	if err == nil && (x.Header().First != first || x.Header().Last != last) {
		err = fmt.Errorf("%w: header says offsets %d..%d, the name %d..%d", index.ErrRun, x.Header().First, x.Header().Last, first, last)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &runReader{RunReader: x, f: f, name: name}, nil
}

// err is the error that ended the reading early, with the file's name.
func (x *runReader) err() error {
	if err := x.Err(); err != nil {
		return fmt.Errorf("%s: %w", x.name, err)
	}
	return nil
}

func (x *runReader) close() { _ = x.f.Close() }

// runWriter writes a run file of a known count as its entries come (a
// temp file renamed into place by finish, like writeRun's), building the
// run's in-memory part (page index, filter) on the way.
type runWriter struct {
	d    *Index
	enc  *index.RunEncoder
	f    vfs.File
	name string
	r    *dedupRun
	n    int
	err  error
}

// createRun starts the run file first..last of count entries.
func (d *Index) createRun(first, last uint64, count int) (*runWriter, error) {
	enc, err := index.NewRunEncoder(first, last, count)
	if err != nil {
		return nil, err
	}
	name := d.path(runName(first, last))
	f, err := d.cfg.FS.OpenFile(name+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	hdr := enc.Header()
	r := &dedupRun{hdr: hdr, pageFirst: make([]uint64, hdr.Pages())}
	if bits, k := d.runFilterFor(count); bits > 0 {
		r.filter = index.NewKFilter(count, bits, k, runFilterSeed)
	}
	return &runWriter{d: d, enc: enc, f: f, name: name, r: r}, nil
}

// add appends the next entry ((hash, offset) ascending).
func (w *runWriter) add(e index.RunEntry) {
	if w.n%index.RunPageEntries == 0 && w.n < w.r.hdr.Count {
		w.r.pageFirst[w.n/index.RunPageEntries] = e.Hash
	}
	w.n++
	if w.r.filter != nil {
		w.r.filter.Add(e.Hash)
	}
	w.enc.Add(e)
	if w.enc.Buffered() >= runFlushBytes && w.err == nil {
		_, w.err = w.enc.WriteTo(w.f)
	}
}

// finish writes the rest, closes the file and renames it into place,
// returning the run's in-memory part; on any error (a write, or entries
// that were not the count in order) the temp file is removed.
func (w *runWriter) finish() (*dedupRun, error) {
	err := w.err
	if err == nil {
		err = w.enc.Close()
	}
	if err == nil {
		_, err = w.enc.WriteTo(w.f)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.d.cfg.FS.Rename(w.name+".tmp", w.name)
	}
	if err != nil {
		_ = w.d.cfg.FS.Remove(w.name + ".tmp")
		return nil, fmt.Errorf("write %s: %w", w.name, err)
	}
	return w.r, nil
}

// abort gives the write up and removes the temp file.
func (w *runWriter) abort() {
	_ = w.f.Close()
	_ = w.d.cfg.FS.Remove(w.name + ".tmp")
}
