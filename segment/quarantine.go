package segment

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/combmq/comb/vfs"
)

// QuarantineFileName is the marker in a partition directory that lists the
// offset ranges `comb fsck --repair` moved out of the log (issue 5). Without
// it Open refuses a gap in the offsets between two segment files; with it,
// a gap the marker covers is accepted: offsets stay where they are, Read and
// the time lookups skip the gap, FirstOffset and NextOffset are unchanged.
//
// Format: UTF-8 text, the header line, then one line per quarantined range,
// inclusive offsets in decimal, anything after them on the line a free-form
// note (fsck writes where the file went):
//
//	comb-quarantine v1
//	61 120 quarantine/partitions/<id>/00000000000000000061.seg
//
// Blank lines and lines starting with '#' are ignored. The file is only ever
// replaced whole (write temp, fsync, rename, fsync the directory), so a crash
// leaves the old list or the new one, never a torn one.
const QuarantineFileName = "QUARANTINE"

const quarantineHeader = "comb-quarantine v1"

// OffsetRange is an inclusive range of offsets.
type OffsetRange struct {
	First, Last uint64
}

// ErrBadQuarantine is wrapped when a QUARANTINE marker does not parse: Open
// refuses the log rather than guess which gaps it meant to allow.
var ErrBadQuarantine = errors.New("segment: malformed QUARANTINE marker")

// ReadQuarantine returns the ranges listed in dir's QUARANTINE marker, in file
// order; nil and no error when there is no marker. Read-only.
func ReadQuarantine(dir string) ([]OffsetRange, error) {
	r, err := readQuarantineFS(vfs.OS, dir)
	if err != nil {
		return nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	return r, nil
}

// markerLine is one line of a QUARANTINE marker after its header: a range
// with its note, or a blank or comment line (r nil) kept as it was.
type markerLine struct {
	raw  string
	r    *OffsetRange
	note string
}

func (m markerLine) String() string {
	if m.r == nil {
		return m.raw
	}
	if m.note == "" {
		return fmt.Sprintf("%d %d", m.r.First, m.r.Last)
	}
	return fmt.Sprintf("%d %d %s", m.r.First, m.r.Last, m.note)
}

// newMarkerLine is a range line; the note is folded onto one line.
func newMarkerLine(r OffsetRange, note string) markerLine {
	return markerLine{r: &r, note: strings.Join(strings.Fields(note), " ")}
}

// parseQuarantine decodes a marker. It never panics on any input.
func parseQuarantine(b []byte) ([]OffsetRange, error) {
	lines, err := parseMarkerLines(b)
	var out []OffsetRange
	for _, l := range lines {
		if l.r != nil {
			out = append(out, *l.r)
		}
	}
	return out, err
}

// parseMarkerLines decodes a marker's lines after the header. It never
// panics on any input.
func parseMarkerLines(b []byte) ([]markerLine, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []markerLine
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if line == 1 {
			if t != quarantineHeader {
				return nil, fmt.Errorf("%w: first line %q, want %q", ErrBadQuarantine, t, quarantineHeader)
			}
			continue
		}
		if t == "" || t[0] == '#' {
			out = append(out, markerLine{raw: t})
			continue
		}
		f := strings.Fields(t)
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: line %d: want \"first last\"", ErrBadQuarantine, line)
		}
		first, err1 := strconv.ParseUint(f[0], 10, 64)
		last, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil || first == 0 || last < first {
			return nil, fmt.Errorf("%w: line %d: bad range %q %q", ErrBadQuarantine, line, f[0], f[1])
		}
		out = append(out, markerLine{r: &OffsetRange{First: first, Last: last}, note: strings.Join(f[2:], " ")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuarantine, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%w: empty file", ErrBadQuarantine)
	}
	return out, nil
}

// QuarantineCovers reports whether the union of rs (adjacent or overlapping
// ranges count together) holds every offset of [first, last]: the test Open
// applies to a gap between files.
func QuarantineCovers(rs []OffsetRange, first, last uint64) bool {
	rs = append([]OffsetRange(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
	need := first
	for _, r := range rs {
		if r.First > need {
			break
		}
		if r.Last >= last {
			return true
		}
		need = max(need, r.Last+1)
	}
	return false
}

// AddQuarantined adds r (with an optional one-line note, e.g. where the data
// went) to dir's QUARANTINE marker, creating it when missing. Only fsck
// --repair calls it, with the log closed and the data directory locked.
//
// Durability: the new marker is written to a temporary file and fsynced,
// renamed over the old one, and the directory fsynced; when AddQuarantined
// returns nil the range survives a crash, and a crash before that leaves the
// previous marker intact. Errors: ErrBadQuarantine when the existing marker
// does not parse (it is left alone), or the I/O error.
func AddQuarantined(dir string, r OffsetRange, note string) error {
	return addQuarantinedFS(vfs.OS, dir, r, note)
}

func addQuarantinedFS(fsys fileSystem, dir string, r OffsetRange, note string) error {
	if r.First == 0 || r.Last < r.First {
		return fmt.Errorf("segment log %s: quarantine range %d-%d: %w", dir, r.First, r.Last, ErrBadQuarantine)
	}
	return editQuarantineFS(fsys, dir, func(lines []markerLine) []markerLine {
		return append(lines, newMarkerLine(r, note))
	})
}

// editQuarantineFS replaces dir's marker with edit(its lines), atomically
// (see AddQuarantined); a missing marker edits an empty list. An edit that
// leaves no range line removes the marker (and syncs the directory).
func editQuarantineFS(fsys fileSystem, dir string, edit func([]markerLine) []markerLine) error {
	path := join(dir, QuarantineFileName)
	var lines []markerLine
	old, err := fsys.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("segment log %s: %w", dir, err)
	default:
		if lines, err = parseMarkerLines(old); err != nil {
			return fmt.Errorf("segment log %s: %w", dir, err)
		}
	}
	lines = edit(lines)
	ranges := 0
	var b strings.Builder
	b.WriteString(quarantineHeader + "\n")
	for _, l := range lines {
		if l.r != nil {
			ranges++
		}
		b.WriteString(l.String() + "\n")
	}
	if ranges == 0 {
		if err := fsys.Remove(path); err != nil {
			return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
		}
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
		}
		return nil
	}
	if err := vfs.WriteFileAtomic(fsys, path, []byte(b.String()), false); err != nil {
		return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
	}
	return nil
}

// readQuarantineFS reads the marker through the Log's file system seam (so
// the crash-simulating tests see it too); nil when there is none.
func readQuarantineFS(fsys fileSystem, dir string) ([]OffsetRange, error) {
	f, err := fsys.OpenFile(join(dir, QuarantineFileName), os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > 16<<20 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadQuarantine, size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return parseQuarantine(b)
}
