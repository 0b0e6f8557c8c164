package entrylog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// FileCheck is what Check found in one file.
type FileCheck struct {
	Name   string
	Size   int64
	Synced int64 // the header's synced slot (HeaderSize when it does not verify)
	SlotOK bool
	Frames int
	// End is where the verified frames stop; Tail says what follows
	// (record's words). Damage is set for what Open refuses to start with;
	// Cut for what Open would cut (past the synced length, bytes kept first).
	End    int64
	Tail   record.Tail
	Damage *CorruptionError
	Cut    bool
}

// CheckReport is what Check found in an entry log directory.
type CheckReport struct {
	Files      []FileCheck
	Partitions int   // with live records
	LiveBytes  int64 // of live frames
	// Segments is every live extent per partition, for offline readers
	// (comb dump, replay): read them with ReadSegment.
	Segments map[[16]byte][]Extent
}

// Check scans the entry log in dir read-only, by the rules Open applies,
// and reports every file's state and the index Open would build. A missing
// dir is an empty report.
//
// Errors: the file system's (not damage: that is in the report).
func Check(fsys vfs.FS, dir string) (*CheckReport, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	rep := &CheckReport{Segments: map[[16]byte][]Extent{}}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return nil, fmt.Errorf("entrylog %s: %w", dir, err)
	}
	var seqs []uint64
	for _, n := range names {
		if seq, ok := ParseFileName(n); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	l := &Log{dir: dir, fs: fsys, files: map[uint64]*elFile{}, parts: map[[16]byte]*part{}}
	for i, seq := range seqs {
		name := filepath.Join(dir, FileName(seq))
		data, err := fsys.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("entrylog: %w", err)
		}
		fc := FileCheck{Name: name, Size: int64(len(data))}
		if _, herr := parseHeader(data, seq); herr != nil {
			fc.Tail = record.TailDamaged
			if creationCut(data, i == len(seqs)-1) {
				fc.Cut = true
			} else {
				fc.Damage = &CorruptionError{File: name, EndByte: int64(min(len(data), HeaderSize)), Tail: record.TailDamaged, Reason: "file header: " + herr.Error()}
			}
			rep.Files = append(rep.Files, fc)
			continue
		}
		ef := &elFile{seq: seq, name: name}
		v := scanFile(data, seq, func(pos int64, size int32, e *Entry) { l.applyLocked(ef, pos, size, e) })
		l.files[seq] = ef
		fc.Synced, fc.SlotOK, fc.Frames, fc.End, fc.Tail = v.hdr.synced, v.hdr.slotOK, v.frames, v.end, v.tail
		if d := v.damage(name); d != nil {
			fc.Damage = d
		} else if v.end < v.size {
			fc.Cut = true
		}
		rep.Files = append(rep.Files, fc)
	}
	for id, p := range l.parts {
		if len(p.exts) > 0 {
			rep.Partitions++
			rep.Segments[id] = p.exts
			for _, e := range p.exts {
				rep.LiveBytes += int64(e.Size)
			}
		}
	}
	return rep, nil
}

// ReadSegment reads extent e of partition id from the entry log in dir
// (offline readers; a live server uses Log.Segment) and returns the
// segment's bytes, its frame verified.
//
// Errors: ErrCorrupt (wrapped); the file system's.
func ReadSegment(fsys vfs.FS, dir string, id [16]byte, e Extent) ([]byte, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	name := filepath.Join(dir, FileName(e.File))
	f, err := fsys.OpenFile(name, 0)
	if err != nil {
		return nil, fmt.Errorf("entrylog: %w", err)
	}
	defer f.Close()
	var hb [HeaderSize]byte
	if _, err := f.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("entrylog %s: header: %w", name, err)
	}
	h, err := parseHeader(hb[:], e.File)
	if err != nil {
		return nil, fmt.Errorf("entrylog %s: %w", name, err)
	}
	ef := &elFile{seq: e.File, name: name, f: f, format: frameFormat(h.seed)}
	l := &Log{files: map[uint64]*elFile{e.File: ef}}
	return l.readLocked(id, e, nil)
}
