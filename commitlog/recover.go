package commitlog

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// Recovery says what Open found and repaired.
type Recovery struct {
	Files    int         // files of the log
	First    LSN         // first entry kept (0 = the log holds none)
	Last     LSN         // last entry kept (0 = none)
	Tail     record.Tail // what followed the last batch of the newest file
	CutAt    int64       // where a torn tail was zeroed (bytes into CutFile)
	CutBytes int64       // how many non-zero bytes it held
	CutFile  string
	KeptAt   string // the copy of those bytes ("" = none)
}

// Repaired reports whether Open zeroed a torn tail.
func (r *Recovery) Repaired() bool { return r.CutBytes > 0 }

// recover reads every file (see the package comment) and leaves l ready to
// append after the last durable entry.
func (l *Log) recover() (*Recovery, error) {
	rec := &Recovery{}
	if err := l.fs.MkdirAll(l.dir); err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	if l.start, err = readStart(l.fs, l.dir); err != nil {
		return nil, err
	}
	type named struct {
		name  string
		first LSN
	}
	var found []named
	for _, n := range names {
		if strings.HasPrefix(n, sparePrefix) {
			_ = l.fs.Remove(filepath.Join(l.dir, n)) // prepared, never used
			continue
		}
		if first, ok := parseFileName(n); ok {
			found = append(found, named{n, first})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].first < found[j].first })
	expect := LSN(0)
	for i, n := range found {
		newest := i == len(found)-1
		w, err := l.openFile(filepath.Join(l.dir, n.name), n.first, newest, expect, rec)
		if err != nil {
			return nil, err
		}
		l.files = append(l.files, w)
		if rec.First == 0 && w.last != 0 {
			rec.First = w.first
		}
		expect = w.first
		if w.last != 0 {
			expect = w.last + 1
			rec.Last = w.last
		}
	}
	rec.Files = len(l.files)
	l.next = expect
	if len(found) == 0 {
		l.next = max(l.opts.StartLSN, l.start, 1)
	}
	if rec.First != 0 && rec.First < l.start {
		rec.First = min(l.start, rec.Last+1)
		if rec.First > rec.Last {
			rec.First, rec.Last = 0, 0
		}
	}
	if len(l.files) == 0 || l.files[len(l.files)-1].room() < frameOverhead+64 {
		l.spares++
		w, err := prepareFile(l.fs, filepath.Join(l.dir, spareName(l.spares)), l.opts.InitialBytes, l.noSync())
		if err != nil {
			return nil, err
		}
		l.files = append(l.files, w)
	}
	if len(found) == 0 && !l.noSync() {
		// A new log: its directory's own entry must survive.
		if err := l.fs.SyncDir(filepath.Dir(l.dir)); err != nil {
			return nil, fmt.Errorf("commitlog: %w", err)
		}
	}
	return rec, nil
}

// openFile reads one file, checks that its batches continue from expect (0
// = the first file: anything) and applies the tail rule; the newest file's
// torn tail is kept in quarantine and zeroed.
func (l *Log) openFile(path string, first LSN, newest bool, expect LSN, rec *Recovery) (*walFile, error) {
	name := filepath.Base(path)
	if expect != 0 && first != expect {
		return nil, fmt.Errorf("%w: %s starts at LSN %d, the file before it ends at %d", ErrCorrupt, name, first, expect-1)
	}
	f, err := l.fs.OpenFile(path, os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	data, err := vfs.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("commitlog %s: %w", name, err)
	}
	h, hlen, err := decodeHeader(data)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: header: %v", ErrCorrupt, name, err)
	}
	w := &walFile{path: path, first: first, f: f, format: batchFormat.WithSeed(h.salt), synced: true}
	w.size.Store(int64(len(data)))
	next := first
	sc, err := w.format.Scan(data[hlen:], func(pos int64, body []byte) error {
		bfirst, count, err := eachEntry(body, nil)
		switch {
		case err != nil:
			return fmt.Errorf("batch at byte %d does not decode: %v", int64(hlen)+pos, err)
		case bfirst != next:
			return fmt.Errorf("batch at byte %d starts at LSN %d, expected %d", int64(hlen)+pos, bfirst, next)
		}
		next += LSN(count)
		return nil
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	w.end = int64(hlen) + sc.End
	if next > first {
		w.last = next - 1
	}
	verdict, err := judgeTail(name, newest, sc, int64(hlen), int64(len(data)), !l.noSync(), l.opts.Sync == SyncAlways)
	if err != nil {
		f.Close()
		return nil, err
	}
	if verdict == tailCut {
		if err := l.cutTail(w, data[w.end:int64(hlen)+sc.DataEnd], rec); err != nil {
			f.Close()
			return nil, err
		}
		rec.Tail = sc.Tail
	}
	if newest && rec.Tail == record.TailClean {
		rec.Tail = sc.Tail
	}
	return w, nil
}

// cutTail copies the bytes of a torn tail (from w.end) to the quarantine
// directory, then writes zeros over them and syncs: afterwards only zeros
// follow the last batch, and the next batch is written there.
func (l *Log) cutTail(w *walFile, tail []byte, rec *Recovery) error {
	name := filepath.Base(w.path)
	kept := filepath.Join(l.opts.QuarantineDir, fmt.Sprintf("%s.from-%d.%d", name, w.end, time.Now().UnixMicro()))
	err := l.fs.MkdirAll(l.opts.QuarantineDir)
	if err == nil {
		err = vfs.WriteFileAtomic(l.fs, kept, tail, l.noSync())
	}
	if err != nil {
		// A full disk must not stop a start: the torn batch was never
		// acknowledged (its fdatasync had not returned).
		kept = ""
	}
	for off := int64(0); off < int64(len(tail)); {
		n := min(int64(len(zeros)), int64(len(tail))-off)
		if _, err := w.f.WriteAt(zeros[:n], w.end+off); err != nil {
			return fmt.Errorf("commitlog %s: zero the torn tail at byte %d: %w", name, w.end+off, err)
		}
		off += n
	}
	if !l.noSync() {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("commitlog %s: %w", name, err)
		}
	}
	rec.CutAt, rec.CutBytes, rec.CutFile, rec.KeptAt = w.end, int64(len(tail)), name, kept
	return nil
}
