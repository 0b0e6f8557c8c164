package analytics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// fileFormat frames the analytics file (doc.go). Its bodies carry queue
// names, so it is salted like the other files with client bytes.
var fileFormat = record.NewFormat("CANL", 1<<30).WithSeed(0x616e616c79746963)

// ErrFile reports a body that does not decode (a bug or a newer version; its
// frame passed a checksum).
var ErrFile = errors.New("analytics: malformed file")

// fileVersion 2 adds a point's DeadLettered after LagMaxMs; Decode still
// reads version 1 (those points read DeadLettered 0).
const fileVersion = 2

// Encode returns the file body of the store's rings (doc.go). The live
// counters are not included: call Flush first to keep them.
func (s *Store) Encode() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := []byte{fileVersion}
	b = binary.AppendVarint(b, s.minute)
	b = binary.AppendUvarint(b, uint64(len(s.byID)+1))
	b = appendSeries(b, [16]byte{}, s.all)
	for id, sr := range s.byID {
		b = appendSeries(b, id, sr)
	}
	return b
}

func appendSeries(b []byte, id [16]byte, sr *series) []byte {
	b = append(b, id[:]...)
	b = record.AppendString(b, sr.name)
	for i := range sr.rings {
		r := &sr.rings[i]
		b = binary.AppendVarint(b, r.last)
		n := 0
		for _, p := range r.pts {
			if !p.IsZero() {
				n++
			}
		}
		b = binary.AppendUvarint(b, uint64(n))
		if n == 0 {
			continue
		}
		for t := r.last; t > r.last-int64(r.size) && t >= 0; t-- {
			p := r.get(t)
			if p.IsZero() {
				continue
			}
			b = binary.AppendUvarint(b, uint64(r.last-t))
			for _, v := range [...]uint64{p.Ingested, p.Popped, p.Processed, p.Errors, p.LagSumMs, p.LagMaxMs, p.DeadLettered} {
				b = binary.AppendUvarint(b, v)
			}
		}
	}
	return b
}

// Decode reads a body written by Encode into a new Store. Points outside a
// ring's window are dropped; a duplicate id keeps the last one.
//
// Errors: ErrFile (wrapped with what failed).
func Decode(body []byte) (*Store, error) {
	s := NewStore()
	if len(body) < 1 || body[0] < 1 || body[0] > fileVersion {
		return nil, fmt.Errorf("%w: version", ErrFile)
	}
	version := body[0]
	d := &record.Fields{B: body[1:], MaxString: 1 << 10}
	s.minute = d.Varint()
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err == nil; i++ {
		id := d.ID()
		name := d.String()
		sizes := queueSizes
		if id == ([16]byte{}) {
			sizes = allSizes
		}
		sr := newSeries(name, sizes)
		for k := range sr.rings {
			decodeRing(d, &sr.rings[k], s.minute*60/Interval(k).Seconds(), version)
		}
		if id == ([16]byte{}) {
			s.all = sr
		} else {
			s.byID[id] = sr
		}
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	if s.minute < 0 {
		return nil, fmt.Errorf("%w: minute %d", ErrFile, s.minute)
	}
	return s, nil
}

// decodeRing reads one ring; a window ending after maxUnit (the unit of the
// file's minute) or before 0 is dropped, so a damaged stamp cannot pin a ring
// in the future.
func decodeRing(d *record.Fields, r *ring, maxUnit int64, version byte) {
	last := d.Varint()
	n := d.Uvarint()
	if n > uint64(len(d.B)) { // every point takes at least 7 bytes: refuse before looping
		d.B, d.Err = nil, record.ErrFields
		return
	}
	for j := uint64(0); j < n && d.Err == nil; j++ {
		age := d.Uvarint()
		var p Point
		p.Ingested, p.Popped, p.Processed = d.Uvarint(), d.Uvarint(), d.Uvarint()
		p.Errors, p.LagSumMs, p.LagMaxMs = d.Uvarint(), d.Uvarint(), d.Uvarint()
		if version >= 2 {
			p.DeadLettered = d.Uvarint()
		}
		if d.Err != nil || age >= uint64(r.size) || last < 0 || last > maxUnit || last-int64(age) < 0 {
			continue
		}
		if r.pts == nil { // the window ends at last, whatever the order of the points
			r.pts, r.last = make([]Point, r.size), last
		}
		r.pts[r.slot(last-int64(age))] = p
	}
}

// Save writes the store to name atomically (record.Format.WriteFile: temp,
// fsync, rename, fsync of the directory; noSync skips the syncs).
func (s *Store) Save(fsys vfs.FS, name string, noSync bool) error {
	if err := fileFormat.WriteFile(fsys, name, s.Encode(), noSync); err != nil {
		return fmt.Errorf("analytics: save: %w", err)
	}
	return nil
}

// Load reads name into a new Store; a missing file gives an empty one.
//
// Errors: the file system's, the framing's (record), or ErrFile.
func Load(fsys vfs.FS, name string) (*Store, error) {
	body, err := fileFormat.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return NewStore(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("analytics: load: %w", err)
	}
	return Decode(body)
}
