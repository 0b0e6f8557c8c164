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
	b, err := os.ReadFile(join(dir, QuarantineFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	r, err := parseQuarantine(b)
	if err != nil {
		return nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	return r, nil
}

// parseQuarantine decodes a marker. It never panics on any input.
func parseQuarantine(b []byte) ([]OffsetRange, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []OffsetRange
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
		out = append(out, OffsetRange{First: first, Last: last})
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
	if r.First == 0 || r.Last < r.First {
		return fmt.Errorf("segment log %s: quarantine range %d-%d: %w", dir, r.First, r.Last, ErrBadQuarantine)
	}
	path := join(dir, QuarantineFileName)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = []byte(quarantineHeader + "\n")
	case err != nil:
		return fmt.Errorf("segment log %s: %w", dir, err)
	default:
		if _, err := parseQuarantine(old); err != nil {
			return fmt.Errorf("segment log %s: %w", dir, err)
		}
		if len(old) > 0 && old[len(old)-1] != '\n' {
			old = append(old, '\n')
		}
	}
	line := fmt.Sprintf("%d %d", r.First, r.Last)
	if note = strings.Join(strings.Fields(note), " "); note != "" {
		line += " " + note
	}
	data := append(old, line+"\n"...)
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
	}
	if err := vfs.OS.SyncDir(dir); err != nil {
		return fmt.Errorf("segment log %s: quarantine marker: %w", dir, err)
	}
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// readQuarantineFS reads the marker through the Log's file system seam (so
// the crash-simulating tests see it too); nil when there is none.
func readQuarantineFS(fsys fileSystem, dir string) ([]OffsetRange, error) {
	f, err := openAppend(fsys, join(dir, QuarantineFileName), false)
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
