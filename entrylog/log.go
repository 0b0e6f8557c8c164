package entrylog

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// DefaultMaxFileBytes is where the active file rotates: large enough that a
// flush pass of small partitions rarely makes more than one file, small
// enough that compaction copies at most a quarter of it.
const DefaultMaxFileBytes = 64 << 20

// Options configures a Log.
type Options struct {
	FS vfs.FS // vfs.OS when nil
	// MaxFileBytes is the active file's rotation point (DefaultMaxFileBytes when 0).
	MaxFileBytes int64
	// QuarantineDir keeps the bytes Open cuts from a torn tail (as
	// <QuarantineDir>/<file>.from-<byte>); "" keeps them beside the file.
	QuarantineDir string
	// NoSync skips every fdatasync (tests and benchmarks only).
	NoSync bool
}

func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

// Errors of Append and the reads.
var (
	// ErrTrimmed: the segment's offsets all lie below the partition's trim
	// point (it was deleted, retained past, or moved to its own directory).
	ErrTrimmed = errors.New("entrylog: the partition's records there are trimmed")
	// ErrNotFound: no live segment of the partition starts at that offset.
	ErrNotFound = errors.New("entrylog: no such segment")
	// ErrConflict: the index holds another segment at the same base offset
	// (the same segment homed twice is not an error).
	ErrConflict = errors.New("entrylog: a different segment is homed at that offset")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("entrylog: closed")
)

// Log is the set of entry log files of one data directory and their index.
//
// Concurrency: every method is safe for concurrent use. Appends, trims and
// compaction serialise on one lock; reads share it (a read holds it across
// its pread, so compaction never closes a file under one); Sync holds it
// only to note and publish, not across its fdatasyncs.
type Log struct {
	dir  string
	opts Options
	fs   vfs.FS

	syncMu sync.Mutex // one Sync or Compact at a time

	mu       sync.RWMutex
	files    map[uint64]*elFile
	order    []uint64 // file numbers, ascending; the last is the active file
	parts    map[[16]byte]*part
	buf      []byte // frame encoding buffer (under mu)
	created  uint64 // files created, ever; dirSynced is the count a directory sync covered
	dirSyncd uint64
	closed   bool
}

// elFile is one open file.
type elFile struct {
	seq    uint64
	name   string
	f      vfs.File
	format record.Format
	seed   uint64
	size   int64 // bytes written (header and whole frames)
	synced int64 // bytes an fdatasync covered (what the slot says, or will)
	live   int64 // bytes of live frames
}

// Cut is a tail Open cut from a file.
type Cut struct {
	File     string
	From, To int64 // [From, To): what was cut (To: the file's size)
	Tail     record.Tail
	Kept     string // where its non-zero bytes were copied ("" when all zero)
}

// Report is what Open repaired.
type Report struct {
	Files    int
	Cuts     []Cut
	BadSlots []string // files whose synced slot did not verify (read as nothing synced)
}

// Open opens (creating when missing) the entry log in dir and rebuilds its
// index by scanning every file (the package comment's rules): a torn or
// damaged tail past a file's synced length is cut after its bytes are kept,
// the remains of a file creation a crash cut short are removed the same way.
//
// Errors: *CorruptionError (errors.Is ErrCorrupt) for damage it must not
// cut; the file system's, wrapped with the path. Nothing is changed on error
// beyond the tails already cut in earlier files.
func Open(dir string, opts Options) (*Log, *Report, error) {
	opts = opts.withDefaults()
	l := &Log{dir: dir, opts: opts, fs: opts.FS, files: map[uint64]*elFile{}, parts: map[[16]byte]*part{}}
	rep := &Report{}
	names, err := l.fs.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = l.fs.MkdirAll(dir); err == nil && !opts.NoSync {
			err = l.fs.SyncDir(filepath.Dir(dir))
		}
		names = nil
	}
	if err != nil {
		return nil, rep, fmt.Errorf("entrylog %s: %w", dir, err)
	}
	var seqs []uint64
	for _, n := range names {
		if seq, ok := ParseFileName(n); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		if err := l.openFile(seq, i == len(seqs)-1, rep); err != nil {
			l.closeFiles()
			return nil, rep, err
		}
	}
	rep.Files = len(l.order)
	return l, rep, nil
}

// openFile scans file seq, applies its entries to the index and repairs its tail.
func (l *Log) openFile(seq uint64, newest bool, rep *Report) error {
	name := filepath.Join(l.dir, FileName(seq))
	f, err := l.fs.OpenFile(name, os.O_RDWR)
	if err != nil {
		return fmt.Errorf("entrylog: %w", err)
	}
	data, err := vfs.ReadAll(f)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("entrylog %s: read: %w", name, err)
	}
	if _, herr := parseHeader(data, seq); herr != nil {
		if !creationCut(data, newest) {
			_ = f.Close()
			return &CorruptionError{File: name, StartByte: 0, EndByte: int64(min(len(data), HeaderSize)), Tail: record.TailDamaged,
				Reason: "file header: " + herr.Error()}
		}
		kept, err := l.keep(name, data, 0)
		_ = f.Close()
		if err == nil {
			err = l.fs.Remove(name)
		}
		if err == nil && !l.opts.NoSync {
			err = l.fs.SyncDir(l.dir)
		}
		if err != nil {
			return fmt.Errorf("entrylog %s: remove a file whose creation a crash cut: %w", name, err)
		}
		rep.Cuts = append(rep.Cuts, Cut{File: name, From: 0, To: int64(len(data)), Tail: record.TailTorn, Kept: kept})
		return nil
	}
	type applied struct {
		pos  int64
		size int32
		e    Entry
	}
	var ents []applied
	v := scanFile(data, seq, func(pos int64, size int32, e *Entry) {
		ents = append(ents, applied{pos, size, *e})
	})
	if d := v.damage(name); d != nil {
		_ = f.Close()
		return d
	}
	if !v.hdr.slotOK {
		rep.BadSlots = append(rep.BadSlots, name)
	}
	if v.end < v.size {
		kept, err := l.keep(name, data[:v.dataEnd], v.end)
		if err == nil {
			err = f.Truncate(v.end)
		}
		if err == nil && !l.opts.NoSync {
			err = f.Sync()
		}
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("entrylog %s: cut its tail at byte %d: %w", name, v.end, err)
		}
		rep.Cuts = append(rep.Cuts, Cut{File: name, From: v.end, To: v.size, Tail: v.tail, Kept: kept})
	}
	ef := &elFile{seq: seq, name: name, f: f, format: frameFormat(v.hdr.seed), seed: v.hdr.seed, size: v.end, synced: min(v.hdr.synced, v.end)}
	l.files[seq] = ef
	l.order = append(l.order, seq)
	for i := range ents {
		a := &ents[i]
		l.applyLocked(ef, a.pos, a.size, &a.e)
	}
	return nil
}

// applyLocked adds one entry found in ef at pos to the index.
func (l *Log) applyLocked(ef *elFile, pos int64, size int32, e *Entry) {
	p := l.parts[e.Partition]
	if p == nil {
		p = &part{}
		l.parts[e.Partition] = p
	}
	p.addFrame(ef.seq)
	switch e.Kind {
	case KindSegment:
		if p.insert(Extent{File: ef.seq, Pos: pos, Size: size, Count: e.Count, Base: e.Base, TsMicros: e.TsMicros}) {
			ef.live += int64(size)
		}
	case KindTrim:
		for _, d := range p.trimTo(e.Before) {
			if df := l.files[d.File]; df != nil {
				df.live -= int64(d.Size)
			}
		}
	}
}

// keep copies data[from:] (up to its last non-zero byte) to the quarantine
// and syncs the copy; "" when there is nothing non-zero to keep.
func (l *Log) keep(name string, data []byte, from int64) (string, error) {
	end := int64(len(data))
	for end > from && data[end-1] == 0 {
		end--
	}
	if end == from {
		return "", nil
	}
	dir := l.opts.QuarantineDir
	if dir == "" {
		dir = l.dir
	}
	if err := l.fs.MkdirAll(dir); err != nil {
		return "", err
	}
	base := filepath.Join(dir, fmt.Sprintf("%s.from-%d", filepath.Base(name), from))
	path := base
	for i := 1; ; i++ {
		ok, err := vfs.Exists(l.fs, path)
		if err != nil {
			return "", err
		}
		if !ok {
			break
		}
		path = fmt.Sprintf("%s.%d", base, i)
	}
	tmp, err := vfs.WriteTemp(l.fs, path, data[from:end], l.opts.NoSync)
	if err == nil {
		err = l.fs.Rename(tmp, path)
	}
	if err == nil && !l.opts.NoSync {
		err = l.fs.SyncDir(dir)
	}
	if err != nil {
		return "", fmt.Errorf("keep the cut bytes of %s: %w", name, err)
	}
	return path, nil
}

// Append appends one segment of partition id (one whole segment as
// segment.Log.AppendTo returns it: what the partition's commit-log Push entry
// carries after the id) to the active file, in the page cache (Sync makes it
// durable), and returns where it lies. A segment whose base offset the index
// already holds for id is not written again: its extent is returned (a
// replay may home a segment twice); a different segment there is
// ErrConflict.
//
// Errors: ErrCorrupt (wrapped) when seg is not a segment; ErrTrimmed; ErrConflict;
// record.ErrTooLarge past MaxBody; ErrClosed; the file system's (nothing is
// indexed and the file is cut back).
func (l *Log) Append(id [16]byte, seg []byte) (Extent, error) {
	base, count, ts, err := segment.PeekSegment(seg)
	if err != nil {
		return Extent{}, fmt.Errorf("entrylog: append: %w: %w", err, ErrCorrupt)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Extent{}, ErrClosed
	}
	p := l.parts[id]
	if p != nil {
		if base+uint64(count) <= p.trim {
			return Extent{}, ErrTrimmed
		}
		if e, ok := p.find(base); ok {
			old, err := l.readLocked(id, e, nil)
			if err != nil {
				return Extent{}, err
			}
			if !bytes.Equal(old, seg) {
				return Extent{}, fmt.Errorf("entrylog: partition %x offset %d: %w", id, base, ErrConflict)
			}
			return e, nil
		}
	}
	ef, pos, size, err := l.writeLocked(func(b []byte) []byte { return appendSegmentBody(b, id, seg) })
	if err != nil {
		return Extent{}, err
	}
	if p == nil {
		p = &part{}
		l.parts[id] = p
	}
	e := Extent{File: ef.seq, Pos: pos, Size: size, Count: count, Base: base, TsMicros: ts}
	p.addFrame(ef.seq)
	if p.insert(e) {
		ef.live += int64(size)
	}
	return e, nil
}

// find returns the live extent starting at base.
func (p *part) find(base uint64) (Extent, bool) {
	i, ok := slices.BinarySearchFunc(p.exts, base, func(e Extent, b uint64) int {
		switch {
		case e.Base < b:
			return -1
		case e.Base > b:
			return 1
		}
		return 0
	})
	if !ok {
		return Extent{}, false
	}
	return p.exts[i], true
}

// writeLocked frames the body body appends and writes it at the end of the
// active file (rotating first when it would pass MaxFileBytes).
func (l *Log) writeLocked(body func([]byte) []byte) (*elFile, int64, int32, error) {
	ef, err := l.activeLocked()
	if err != nil {
		return nil, 0, 0, err
	}
	b, start := ef.format.Begin(l.buf[:0])
	b = body(b)
	if b, err = ef.format.Finish(b, start); err != nil {
		return nil, 0, 0, fmt.Errorf("entrylog: %w", err)
	}
	l.buf = b[:0]
	if ef.size > HeaderSize && ef.size+int64(len(b)) > l.opts.MaxFileBytes {
		if ef, err = l.rotateLocked(); err != nil {
			return nil, 0, 0, err
		}
		// The new file has another seed: frame again.
		b, start = ef.format.Begin(b[:0])
		b = body(b)
		if b, err = ef.format.Finish(b, start); err != nil {
			return nil, 0, 0, fmt.Errorf("entrylog: %w", err)
		}
		l.buf = b[:0]
	}
	pos := ef.size
	if _, err := ef.f.WriteAt(b, pos); err != nil {
		if terr := ef.f.Truncate(pos); terr != nil {
			err = errors.Join(err, fmt.Errorf("cut back: %w", terr))
		}
		return nil, 0, 0, fmt.Errorf("entrylog %s: write at byte %d: %w", ef.name, pos, err)
	}
	ef.size += int64(len(b))
	return ef, pos, int32(len(b)), nil
}

// activeLocked returns the active file, making the first one.
func (l *Log) activeLocked() (*elFile, error) {
	if n := len(l.order); n > 0 {
		return l.files[l.order[n-1]], nil
	}
	return l.rotateLocked()
}

// rotateLocked makes the next file (a header, no sync: Sync syncs it and
// the directory) and makes it the active one.
func (l *Log) rotateLocked() (*elFile, error) {
	seq := uint64(1)
	if n := len(l.order); n > 0 {
		seq = l.order[n-1] + 1
	}
	var sb [8]byte
	if _, err := io.ReadFull(rand.Reader, sb[:]); err != nil {
		return nil, fmt.Errorf("entrylog: seed: %w", err)
	}
	seed := binary.LittleEndian.Uint64(sb[:])
	name := filepath.Join(l.dir, FileName(seq))
	f, err := l.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, fmt.Errorf("entrylog: %w", err)
	}
	var h [HeaderSize]byte
	putHeader(h[:], fileHeader{seq: seq, seed: seed, synced: HeaderSize})
	if _, err := f.WriteAt(h[:], 0); err != nil {
		_ = f.Close()
		_ = l.fs.Remove(name)
		return nil, fmt.Errorf("entrylog %s: header: %w", name, err)
	}
	ef := &elFile{seq: seq, name: name, f: f, format: frameFormat(seed), seed: seed, size: HeaderSize}
	l.files[seq] = ef
	l.order = append(l.order, seq)
	l.created++
	return ef, nil
}

// Trim marks the records of partition id below offset before dead (retention)
// with a trim frame; Dropped marks all of them (the partition was deleted or
// moved into its own directory). Nothing is written when the index holds no
// frame of id or an equal or later trim. Durable with the next Sync.
//
// Errors: ErrClosed; the file system's.
func (l *Log) Trim(id [16]byte, before uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	p := l.parts[id]
	if p == nil || before <= p.trim {
		return nil
	}
	ef, _, _, err := l.writeLocked(func(b []byte) []byte { return appendTrimBody(b, id, before) })
	if err != nil {
		return err
	}
	p.addFrame(ef.seq)
	for _, d := range p.trimTo(before) {
		if df := l.files[d.File]; df != nil {
			df.live -= int64(d.Size)
		}
	}
	return nil
}

// Sync makes every frame appended so far durable: an fdatasync of each file
// written since the last Sync, of the directory when a file was made, then
// each file's synced slot rewritten and synced again (so the slot never
// claims bytes no fdatasync covered). With NoSync only the bookkeeping.
//
// Errors: ErrClosed; the file system's (the slots keep their old values).
func (l *Log) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncFiles()
}

// syncFiles is Sync with syncMu held.
func (l *Log) syncFiles() error {
	type dirty struct {
		ef   *elFile
		size int64
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	var ds []dirty
	for _, seq := range l.order {
		if ef := l.files[seq]; ef.size > ef.synced {
			ds = append(ds, dirty{ef, ef.size})
		}
	}
	created := l.created
	needDir := created > l.dirSyncd
	l.mu.RUnlock()
	if !l.opts.NoSync {
		for _, d := range ds {
			if err := d.ef.f.Sync(); err != nil {
				return fmt.Errorf("entrylog %s: fdatasync: %w", d.ef.name, err)
			}
		}
		if needDir {
			if err := l.fs.SyncDir(l.dir); err != nil {
				return fmt.Errorf("entrylog %s: sync the directory: %w", l.dir, err)
			}
		}
		for _, d := range ds {
			var slot [16]byte
			putSlot(slot[:], d.ef.seed, d.size)
			if _, err := d.ef.f.WriteAt(slot[:], 32); err != nil {
				return fmt.Errorf("entrylog %s: synced slot: %w", d.ef.name, err)
			}
			if err := d.ef.f.Sync(); err != nil {
				return fmt.Errorf("entrylog %s: fdatasync the synced slot: %w", d.ef.name, err)
			}
		}
	}
	l.mu.Lock()
	for _, d := range ds {
		d.ef.synced = max(d.ef.synced, d.size)
	}
	l.dirSyncd = max(l.dirSyncd, created)
	l.mu.Unlock()
	return nil
}

// Extents returns partition id's live extents, oldest first (nil when none).
func (l *Log) Extents(id [16]byte) []Extent {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if p := l.parts[id]; p != nil && len(p.exts) > 0 {
		return slices.Clone(p.exts)
	}
	return nil
}

// Next is the offset after partition id's newest live record (0 = none).
func (l *Log) Next(id [16]byte) uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if p := l.parts[id]; p != nil {
		return p.next()
	}
	return 0
}

// Partitions returns the ids with live records, in no order.
func (l *Log) Partitions() [][16]byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([][16]byte, 0, len(l.parts))
	for id, p := range l.parts {
		if len(p.exts) > 0 {
			out = append(out, id)
		}
	}
	return out
}

// Segment reads partition id's live segment starting at offset base into buf
// (grown as needed) and returns its bytes (aliasing the returned buffer),
// verified by its frame's checksum; segment.DecodeSegment verifies the
// segment's own.
//
// Errors: ErrNotFound; ErrClosed; ErrCorrupt (wrapped) when the frame does
// not verify or names another segment; the file system's.
func (l *Log) Segment(id [16]byte, base uint64, buf []byte) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	p := l.parts[id]
	if p == nil {
		return nil, ErrNotFound
	}
	e, ok := p.find(base)
	if !ok {
		return nil, ErrNotFound
	}
	return l.readLocked(id, e, buf)
}

// readLocked reads extent e of id.
func (l *Log) readLocked(id [16]byte, e Extent, buf []byte) ([]byte, error) {
	ef := l.files[e.File]
	if ef == nil {
		return nil, ErrNotFound
	}
	if cap(buf) < int(e.Size) {
		buf = make([]byte, e.Size)
	}
	buf = buf[:e.Size]
	if _, err := ef.f.ReadAt(buf, e.Pos); err != nil {
		return nil, fmt.Errorf("entrylog %s: read %d bytes at %d: %w", ef.name, e.Size, e.Pos, err)
	}
	body, n, err := ef.format.Next(buf)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("frame of %d bytes where %d were indexed", n, len(buf))
	}
	var ent Entry
	if err == nil {
		ent, err = DecodeEntry(body)
	}
	if err == nil && (ent.Kind != KindSegment || ent.Partition != id || ent.Base != e.Base) {
		err = fmt.Errorf("frame holds another segment (kind %d, base %d)", ent.Kind, ent.Base)
	}
	if err != nil {
		return nil, fmt.Errorf("entrylog %s byte %d: %v: %w", ef.name, e.Pos, err, ErrCorrupt)
	}
	return ent.Segment, nil
}

// Stats is a Log's size.
type Stats struct {
	Files      int
	Bytes      int64 // of every file
	LiveBytes  int64 // of live frames
	Partitions int   // with live records
}

// Stats returns the Log's current size.
func (l *Log) Stats() Stats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := Stats{Files: len(l.order)}
	for _, ef := range l.files {
		s.Bytes += ef.size
		s.LiveBytes += ef.live
	}
	for _, p := range l.parts {
		if len(p.exts) > 0 {
			s.Partitions++
		}
	}
	return s
}

// Close closes every file without syncing (call Sync first for a clean
// shutdown). Further calls return ErrClosed.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	return l.closeFiles()
}

func (l *Log) closeFiles() error {
	var errs []error
	for _, ef := range l.files {
		errs = append(errs, ef.f.Close())
	}
	return errors.Join(errs...)
}
