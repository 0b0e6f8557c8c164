package dedup

import (
	"errors"
	"fmt"
	"io/fs"
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
// before it writes them, each write ending at a multiple of it in the file.
// Whole aligned 2 MiB writes let the page cache hold the file in large
// folios, which the lookups' mappings then fault in and address a folio at
// a time: written 64 KiB at a time, the mapped lookups of a partition of
// 10 M ids cost 52-71 µs a batch against 25-28 for one write of the whole
// file; 2 MiB unaligned, 33-35 (BenchmarkFind100/new, issue 23).
const runFlushBytes = index.RunEncoderBuffer

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
	name string // the run file's path
	tmp  bool   // f is name+".tmp", renamed over name by finish (a file of the name existed)
	r    *dedupRun
	fa   filterAdder // r's filter, when it has one
	n    int
	// written is the bytes of the file written so far; the next write ends
	// at flushAt (a multiple of runFlushBytes).
	written, flushAt int
	err              error
}

// createRun starts the run file first..last of count entries.
func (d *Index) createRun(first, last uint64, count int) (*runWriter, error) {
	enc, err := index.NewRunEncoder(first, last, count)
	if err != nil {
		return nil, err
	}
	name := d.path(runName(first, last))
	f, tmp, err := d.createRunFile(name)
	if err != nil {
		return nil, err
	}
	hdr := enc.Header()
	r := &dedupRun{hdr: hdr, pageFirst: make([]uint64, hdr.Pages())}
	if bits, k := d.runFilterFor(count); bits > 0 {
		r.filter = index.NewKFilter(count, bits, k, runFilterSeed)
	}
	return &runWriter{d: d, enc: enc, f: f, name: name, tmp: tmp, r: r, fa: filterAdder{f: r.filter}, flushAt: runFlushBytes}, nil
}

// add appends the next entry ((hash, offset) ascending).
func (w *runWriter) add(e index.RunEntry) {
	if w.n%index.RunPageEntries == 0 && w.n < w.r.hdr.Count {
		w.r.pageFirst[w.n/index.RunPageEntries] = e.Hash
	}
	w.n++
	if w.r.filter != nil {
		w.fa.add(e.Hash)
	}
	w.enc.Add(e)
	if n := w.flushAt - w.written; w.enc.Buffered() >= n && w.err == nil {
		w.err = w.enc.WritePrefix(w.f, n)
		w.written, w.flushAt = w.flushAt, w.flushAt+runFlushBytes
	}
}

// finish writes the rest, closes the file and renames it into place,
// returning the run's in-memory part; on any error (a write, or entries
// that were not the count in order) the temp file is removed.
func (w *runWriter) finish() (*dedupRun, error) {
	if w.r.filter != nil {
		w.fa.flush()
	}
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
	if err == nil && w.tmp {
		err = w.d.cfg.FS.Rename(w.name+".tmp", w.name)
	}
	if err != nil {
		w.remove()
		return nil, fmt.Errorf("write %s: %w", w.name, err)
	}
	return w.r, nil
}

// abort gives the write up and removes the file.
func (w *runWriter) abort() {
	_ = w.f.Close()
	w.remove()
}

func (w *runWriter) remove() {
	if w.tmp {
		_ = w.d.cfg.FS.Remove(w.name + ".tmp")
	} else {
		_ = w.d.cfg.FS.Remove(w.name)
	}
}

// createRunFile creates the run file at path name for writing: under its
// own name when no file has it (tmp false), else as name+".tmp" for a
// rename over it once whole (the run a file of that name held may still be
// mapped by lookups, and a mapping must never see its bytes change).
//
// Written under its own name (issue 23: a rename cost ~40-110 µs of kernel
// CPU of the ~135 µs a seal's file did), a run is torn if the process dies
// mid-write; that is what the load's checks are for: a file that is short,
// or whose pages fail, is deleted and its offsets are taken from the runs it
// replaced (removed only after it was whole) or re-indexed from the
// segments. The rename never made a run durable either: nothing syncs them.
func (d *Index) createRunFile(name string) (f vfs.File, tmp bool, err error) {
	f, err = d.cfg.FS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if errors.Is(err, fs.ErrExist) {
		tmp = true
		f, err = d.cfg.FS.OpenFile(name+".tmp", os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	}
	if err != nil {
		return nil, false, fmt.Errorf("write %s: %w", name, err)
	}
	return f, tmp, nil
}

// writeRunFile writes the encoded run b at path name (createRunFile).
func (d *Index) writeRunFile(name string, b []byte) error {
	f, tmp, err := d.createRunFile(name)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	written := name
	if tmp {
		written = name + ".tmp"
		if err == nil {
			err = d.cfg.FS.Rename(written, name)
		}
	}
	if err != nil {
		_ = d.cfg.FS.Remove(written)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
