package notes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// DamageError is what Open refuses to start with, and Check reports: bytes
// of the file that a crash cannot have left (a damaged header, a verified
// record that does not decode, damage with verified records after it). It
// matches ErrCorrupt with errors.Is. Byte positions are in the file:
// [Start, End) is the damage, Resync the first verified record after it
// (-1 when none is known).
type DamageError struct {
	Path       string
	Start, End int64
	Resync     int64
	Reason     string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("notes: %s bytes %d..%d: %s", e.Path, e.Start, e.End, e.Reason)
}

// Is makes every DamageError match ErrCorrupt.
func (e *DamageError) Is(target error) bool { return target == ErrCorrupt }

// Verdict is what Open would do with the file as it is now (Check). Byte
// positions are in the file.
type Verdict struct {
	Path    string
	Exists  bool
	Size    int64
	Records int // whole records Open would load
	// Recreate: the file has no whole header (a crash while creating it,
	// before any record could follow): Open writes a new, empty file.
	Recreate bool
	// End is where the whole records end; when Tail is not "" Open cuts
	// the file there.
	End int64
	// Tail is record.Tail's word for what follows End when Open cuts it
	// ("torn", "damaged", "zeros"), "" when nothing follows.
	Tail string
	// KeptFrom..KeptTo are the non-zero bytes of the cut that Open copies
	// to its quarantine directory first (KeptTo == KeptFrom: nothing kept).
	KeptFrom, KeptTo int64
}

// Repaired reports whether Open would change the file.
func (v Verdict) Repaired() bool { return v.Recreate && v.Size > 0 || v.Tail != "" }

// Check reads the store's file in dir the way Open does, with the same
// decoder and the same tail rule, and changes nothing: comb fsck's view of
// notes/log. Errors: a *DamageError (errors.Is ErrCorrupt) where Open would
// refuse; any other error is a failed read.
func Check(fsys vfs.FS, dir string) (Verdict, error) {
	path := filepath.Join(dir, FileName)
	v := Verdict{Path: path}
	data, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("notes: %w", err)
	}
	v.Exists, v.Size = true, int64(len(data))
	l, err := load(path, data, nil)
	if err != nil {
		return v, err
	}
	v.Records, v.Recreate, v.End = l.sc.Frames, l.recreate, l.end
	if l.cut() {
		v.Tail = l.sc.Tail.String()
		v.KeptFrom, v.KeptTo = l.end, l.end
		if l.sc.Lost() {
			v.KeptTo = int64(l.hlen) + l.sc.DataEnd
		}
	}
	return v, nil
}

// loaded is one read of the file, what Open and Check both decide from.
type loaded struct {
	seed     uint64
	hlen     int
	sc       record.Scan
	end      int64 // where the whole records end, in the file
	recreate bool  // no whole header: the file is written afresh
}

// cut reports whether the file holds bytes after its whole records that the
// tail rule cuts.
func (l loaded) cut() bool {
	switch l.sc.Tail {
	case record.TailTorn, record.TailDamaged, record.TailZeros:
		return !l.recreate
	}
	return false
}

// load decodes the file's header and records (doc.go), passing each record
// to apply (nil: decode only), and applies package record's tail rule.
// Errors: *DamageError for what nothing may cut.
func load(path string, data []byte, apply func(rec noteRecord, n int)) (loaded, error) {
	var l loaded
	seed, hlen, err := readHeader(data)
	if errors.Is(err, record.ErrShort) || errors.Is(err, record.ErrZero) || len(data) == 0 {
		// No header: a new store, or one a crash cut while creating it
		// (records are appended only after the header is durable).
		l.recreate = true
		return l, nil
	}
	if err != nil {
		return l, &DamageError{Path: path, Start: 0, End: min(int64(len(data)), headerFrameBytes), Resync: -1,
			Reason: fmt.Sprintf("the header does not verify (%v): its seed is what every record's checksum needs; move the file aside to start without its notes", err)}
	}
	l.seed, l.hlen = seed, hlen
	rf := recordFormat.WithSeed(seed)
	sc, err := rf.Scan(data[hlen:], func(_ int64, body []byte) error {
		rec, err := decodeBody(body)
		if err != nil {
			return err
		}
		if apply != nil {
			apply(rec, record.HeaderSize+len(body))
		}
		return nil
	})
	l.sc, l.end = sc, int64(hlen)+sc.End
	if err != nil {
		// The frame verified, so its length field is whole.
		n := int64(record.HeaderSize) + int64(binary.LittleEndian.Uint32(data[l.end+4:]))
		return l, &DamageError{Path: path, Start: l.end, End: l.end + n, Resync: -1,
			Reason: fmt.Sprintf("a record verifies but does not decode (%v): a newer format or a bug, never a torn write", err)}
	}
	if sc.Tail == record.TailCorrupt {
		return l, &DamageError{Path: path, Start: l.end, End: int64(hlen) + sc.Resync, Resync: int64(hlen) + sc.Resync,
			Reason: fmt.Sprintf("these bytes do not verify and a record at byte %d does: acknowledged notes follow the damage; move the file aside to start without its notes", int64(hlen)+sc.Resync)}
	}
	return l, nil
}
