package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// MaintenanceFile is the maintenance modes' file in <data>/meta (spec 1.8,
// 8.8; the broker writes it, comb fsck reads it with DecodeMaintenance).
//
// One frame of package record (magic "CMMT") whose body is (little endian):
//
//	0     1       2          6
//	+-----+-------+----------+----------------------------------+
//	| ver | flags | n u32    | n × (partitionId [16], mark u64) |
//	+-----+-------+----------+----------------------------------+
//	ver 2; flags: bit 0 push maintenance, bit 1 pop maintenance
//
// A version 1 file (the same fields after "CMBM", a version byte 1, and an
// xxhash64 of everything before it at the end) is still read.
const MaintenanceFile = "maintenance"

// ErrMaintenanceFile is wrapped when the maintenance file does not decode.
// The broker refuses to start on it: the file is the only record of which
// pushed messages push maintenance still hides.
var ErrMaintenanceFile = errors.New("maintenance file damaged")

const (
	maintVersion   = 2
	maintHeader    = 6
	maintV1Magic   = "CMBM"
	maintV1Version = 1
	maintV1Header  = 10
)

var maintFormat = record.NewFormat("CMMT", 1<<30)

// Maintenance is the decoded maintenance file: both modes and, with push
// maintenance on, every held partition's published mark (the offset after
// the last message pops may see).
type Maintenance struct {
	Push, Pop bool
	Marks     map[[16]byte]uint64
}

// maintBody is the frame body for m (marks in id order).
func maintBody(m Maintenance) []byte {
	buf := make([]byte, maintHeader, maintHeader+len(m.Marks)*24)
	buf[0] = maintVersion
	if m.Push {
		buf[1] |= 1
	}
	if m.Pop {
		buf[1] |= 2
	}
	ids := make([][16]byte, 0, len(m.Marks))
	for id := range m.Marks {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	binary.LittleEndian.PutUint32(buf[2:], uint32(len(ids)))
	for _, id := range ids {
		buf = append(buf, id[:]...)
		buf = binary.LittleEndian.AppendUint64(buf, m.Marks[id])
	}
	return buf
}

// WriteMaintenance writes m as <metaDir>/maintenance: temp file, fsync,
// rename, directory fsync (noSync skips the syncs).
func WriteMaintenance(fsys vfs.FS, metaDir string, m Maintenance, noSync bool) error {
	return maintFormat.WriteFile(fsys, filepath.Join(metaDir, MaintenanceFile), maintBody(m), noSync)
}

// DecodeMaintenance decodes a maintenance file (either version). Errors:
// ErrMaintenanceFile, wrapped with what failed.
func DecodeMaintenance(data []byte) (Maintenance, error) {
	if len(data) >= 4 && string(data[:4]) == maintV1Magic {
		return decodeMaintV1(data)
	}
	body, n, err := maintFormat.Next(data)
	if err == nil && n != len(data) {
		err = fmt.Errorf("%d bytes after the frame", len(data)-n)
	}
	if err != nil {
		return Maintenance{}, fmt.Errorf("%w: %v", ErrMaintenanceFile, err)
	}
	if len(body) < maintHeader || body[0] != maintVersion {
		return Maintenance{}, fmt.Errorf("%w: bad header", ErrMaintenanceFile)
	}
	return decodeMaintEntries(body[1], body[2:6], body[maintHeader:])
}

// decodeMaintV1 reads a version 1 file (comb before issue 10).
func decodeMaintV1(data []byte) (Maintenance, error) {
	if len(data) < maintV1Header+8 || data[4] != maintV1Version {
		return Maintenance{}, fmt.Errorf("%w: bad header", ErrMaintenanceFile)
	}
	body, sum := data[:len(data)-8], binary.LittleEndian.Uint64(data[len(data)-8:])
	if xxhash.Sum64(body) != sum {
		return Maintenance{}, fmt.Errorf("%w: checksum mismatch", ErrMaintenanceFile)
	}
	return decodeMaintEntries(body[5], body[6:10], body[maintV1Header:])
}

// decodeMaintEntries decodes the flags byte, the u32 count and the entries.
func decodeMaintEntries(flags byte, count, entries []byte) (Maintenance, error) {
	m := Maintenance{Push: flags&1 != 0, Pop: flags&2 != 0}
	n := binary.LittleEndian.Uint32(count)
	if uint64(len(entries)) != uint64(n)*24 {
		return m, fmt.Errorf("%w: %d entries in %d bytes", ErrMaintenanceFile, n, len(entries))
	}
	m.Marks = make(map[[16]byte]uint64, n)
	for off := 0; off < len(entries); off += 24 {
		var id [16]byte
		copy(id[:], entries[off:])
		m.Marks[id] = binary.LittleEndian.Uint64(entries[off+16:])
	}
	return m, nil
}
