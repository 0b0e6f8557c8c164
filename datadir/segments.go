package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/segment"
)

// A log directory's file names: "<20-digit first offset>.seg", its index
// "<same>.idx" (docs/format.md).
const (
	SegExt   = ".seg"
	IndexExt = ".idx"
)

// SegFile is one segment file of a log directory as listed.
type SegFile struct {
	Name        string // base name
	Bytes       int64
	FirstOffset uint64 // from the name
}

// IndexName is the name of the index file that describes the segment file f.
func (f SegFile) IndexName() string { return strings.TrimSuffix(f.Name, SegExt) + IndexExt }

// ListSegFiles returns the segment files of dir sorted by first offset; names
// that are not "<20 digits>.seg" with a first offset above 0 are not listed.
func ListSegFiles(dir string) ([]SegFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []SegFile
	for _, e := range ents {
		name := e.Name()
		stem, ok := strings.CutSuffix(name, SegExt)
		if !ok || len(stem) != 20 || e.IsDir() {
			continue
		}
		base, err := strconv.ParseUint(stem, 10, 64)
		if err != nil || base == 0 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, SegFile{Name: name, Bytes: info.Size(), FirstOffset: base})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out, nil
}

// SegInfo is one segment as scanned for dump and replay: File is the segment
// file's name, or "commitlog" (layout.CommitLog) for a segment only the
// commit log holds.
type SegInfo struct {
	File        string
	Pos, Bytes  int64
	FirstOffset uint64
	Count       uint32
	TsMicros    int64
	Codec       string
}

// ScanSegments streams dir's segments and their messages in offset order, starting
// at the segment holding offset from, without writing to dir (segment.Scan: no
// truncation, no index rebuild, safe while a server appends). fn returns false to
// stop; the messages alias memory valid until fn returns. Damage ends the scan with
// a *segment.CorruptionError; a torn tail of the newest file ends it with nil; a gap
// the partition's QUARANTINE marker covers is skipped.
func ScanSegments(dir string, from uint64, fn func(SegInfo, []segment.Message) bool) error {
	return segment.Scan(dir, from, func(s segment.SegmentInfo, msgs []segment.Message) bool {
		return fn(SegInfo{File: s.File, Pos: s.Pos, Bytes: s.Bytes, FirstOffset: s.FirstOffset,
			Count: s.Count, TsMicros: s.TimestampMicros, Codec: s.Codec.String()}, msgs)
	})
}

// IndexEnd is one past the last offset the index of segment file f in dir
// covers (the file's first offset when the index is missing or empty). An
// active file with no index file (segment.LazyIndexSegments) is scanned instead.
func IndexEnd(dir string, f SegFile) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, f.IndexName()))
	if errors.Is(err, os.ErrNotExist) {
		end := f.FirstOffset
		_ = segment.Scan(dir, f.FirstOffset, func(s segment.SegmentInfo, _ []segment.Message) bool {
			end = max(end, s.FirstOffset+uint64(s.Count))
			return true
		})
		return end
	}
	if err != nil || index.CheckHeader(b, f.FirstOffset) != nil {
		return f.FirstOffset
	}
	body := b[index.HeaderSize:]
	n := index.ValidEntries(body, f.FirstOffset)
	if n == 0 {
		return f.FirstOffset
	}
	e, _ := index.DecodeEntry(body[(n-1)*index.EntrySize:])
	return e.Last() + 1
}
