package fsck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/segment"
)

// Quarantine layout: a damaged file is renamed, never copied or deleted, to
//
//	<data>/quarantine/<partitions|dlq>/<id>/<file>[.<n>]
//
// and one JSON line describing it is appended to <data>/quarantine/manifest.jsonl
// (and fsynced) BEFORE the rename, so a crash between the two leaves a manifest line
// for a file still in place (the next run re-plans the move) rather than a moved
// file nobody can explain. The offsets a quarantined file held become a gap in its
// log, which is then added to the partition's QUARANTINE marker (segment
// .AddQuarantined: write temp, fsync, rename) before the rename too, so segment.Open
// serves the log across the gap; later runs report a gap the marker lists as info.
const manifestName = "manifest.jsonl"

// quarantineEntry is one manifest line.
type quarantineEntry struct {
	AtRFC3339   string `json:"at"`
	PartitionID string `json:"partitionId"`
	Queue       string `json:"queue,omitempty"`
	Partition   string `json:"partition,omitempty"`
	Original    string `json:"original"` // relative to the data directory
	Moved       string `json:"moved"`    // relative to the data directory
	StartByte   int64  `json:"startByte"`
	EndByte     int64  `json:"endByte"`
	FirstOffset uint64 `json:"firstOffset"` // offsets the file held (the gap it leaves)
	LastOffset  uint64 `json:"lastOffset"`
	Reason      string `json:"reason"`
}

func readQuarantine(dataDir string) ([]quarantineEntry, error) {
	f, err := os.Open(filepath.Join(dataDir, dirQuarantine, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseManifest(f)
}

// parseManifest decodes manifest lines, skipping a torn or malformed line (a crash
// mid-append: the move it announced had not happened, the rename follows the fsync
// of its line). It never panics on any input.
func parseManifest(r io.Reader) ([]quarantineEntry, error) {
	var out []quarantineEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e quarantineEntry
		if len(sc.Bytes()) == 0 || json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// offsetRanges is a set of inclusive offset ranges.
type offsetRanges [][2]uint64

func (r offsetRanges) covers(first, last uint64) bool {
	if first == 0 && last == 0 {
		return false
	}
	for _, x := range r {
		if x[0] <= first && last <= x[1] {
			return true
		}
	}
	return false
}

// quarantinedRanges returns the offsets quarantined from the log with this id. A gap
// reported by the segment scan that lies inside them is expected.
func (c *checker) quarantinedRanges(id [16]byte) offsetRanges {
	var out offsetRanges
	want := datadir.IDString(id)
	for _, q := range c.quar {
		if q.PartitionID == want && want != "" {
			out = append(out, [2]uint64{q.FirstOffset, q.LastOffset})
		}
	}
	// Adjacent quarantined files leave one gap spanning both.
	for changed := true; changed; {
		changed = false
		for i := range out {
			for j := range out {
				if i != j && out[i][1]+1 == out[j][0] {
					out[i][1] = out[j][1]
					out = append(out[:j], out[j+1:]...)
					changed = true
					break
				}
			}
			if changed {
				break
			}
		}
	}
	return out
}

// errCannotSplit wraps a segment.PlanSplit error: the file's good segments cannot be
// told apart from the damage, so the whole file is quarantined instead.
var errCannotSplit = errors.New("cannot split the damaged file")

// splitFile repairs a damaged sealed segment file with segment.PlanSplit and Apply:
// its good runs of segments stay in the log as files of their own, the original moves
// whole to <data>/quarantine/<partitions|dlq>/<id>/<file>[.<n>], and the offsets of
// each damaged range become a gap listed in the partition's QUARANTINE marker. One
// manifest line per damaged range is appended and fsynced before anything moves, so a
// crash leaves a manifest line for a file still in place rather than a gap nobody can
// explain (segment.Apply's own order covers the rest; FinishSplits completes it).
func splitFile(dataDir string, d datadir.LogDir, name, queue, partition string, now time.Time) ([]quarantineEntry, error) {
	p, err := segment.PlanSplit(d.Path, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCannotSplit, err)
	}
	qdir := filepath.Join(dataDir, dirQuarantine, d.Rel)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return nil, err
	}
	// The new directories' names, so the manifest line below survives a crash.
	for dir := qdir; dir != dataDir && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, err
		}
	}
	dst := filepath.Join(qdir, name)
	for n := 1; ; n++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = filepath.Join(qdir, fmt.Sprintf("%s.%d", name, n))
	}
	rel, _ := filepath.Rel(dataDir, dst)
	var es []quarantineEntry
	for _, g := range p.Damaged {
		e := quarantineEntry{
			AtRFC3339: now.UTC().Format(time.RFC3339), PartitionID: datadir.IDString(d.ID), Queue: queue, Partition: partition,
			Original: filepath.Join(d.Rel, name), Moved: rel, StartByte: g.StartByte, EndByte: g.EndByte,
			FirstOffset: g.FirstOffset, LastOffset: g.LastOffset,
			Reason: g.Reason + fmt.Sprintf(" (the file's %d run(s) of good segments stay in the log; the original is kept whole)", len(p.Runs)),
		}
		if e.PartitionID == "" {
			e.PartitionID = uuid.Nil.String()
		}
		if err := appendManifest(dataDir, e); err != nil {
			return es, err
		}
		es = append(es, e)
	}
	if err := p.Apply(dst, "moved to "+rel); err != nil {
		return es, err
	}
	return es, nil
}

// quarantineFile moves one damaged segment file (and the index file describing it,
// if any) out of its log. Durability: manifest line written and fsynced, then the
// renames, then both directories fsynced.
func quarantineFile(dataDir string, d datadir.LogDir, dm damage, file fileSummary, queue, partition string, now time.Time) (quarantineEntry, error) {
	qdir := filepath.Join(dataDir, dirQuarantine, d.Rel)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return quarantineEntry{}, err
	}
	dst := filepath.Join(qdir, dm.File)
	for n := 1; ; n++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = filepath.Join(qdir, fmt.Sprintf("%s.%d", dm.File, n))
	}
	rel, _ := filepath.Rel(dataDir, dst)
	e := quarantineEntry{
		AtRFC3339: now.UTC().Format(time.RFC3339), PartitionID: datadir.IDString(d.ID), Queue: queue, Partition: partition,
		Original: filepath.Join(d.Rel, dm.File), Moved: rel, StartByte: dm.StartByte, EndByte: dm.EndByte,
		FirstOffset: file.FirstOffset, LastOffset: file.LastOffset, Reason: dm.Reason,
	}
	if e.PartitionID == "" {
		e.PartitionID = uuid.Nil.String()
	}
	if err := appendManifest(dataDir, e); err != nil {
		return e, err
	}
	// The marker before the move: a crash in between leaves a marker over offsets
	// still present (harmless), never a gap the server refuses.
	if file.FirstOffset != 0 && file.LastOffset >= file.FirstOffset {
		if err := segment.AddQuarantined(d.Path, segment.OffsetRange{First: file.FirstOffset, Last: file.LastOffset}, "moved to "+rel); err != nil {
			return e, err
		}
	}
	if err := os.Rename(filepath.Join(d.Path, dm.File), dst); err != nil {
		return e, fmt.Errorf("quarantine %s: %w", e.Original, err)
	}
	// The index file of the moved segment file describes data no longer there.
	for _, idx := range indexFilesFor(d.Path, dm.File) {
		_ = os.Rename(idx, filepath.Join(qdir, filepath.Base(idx)))
	}
	for _, dir := range []string{qdir, d.Path, filepath.Join(dataDir, dirQuarantine)} {
		if err := syncDir(dir); err != nil {
			return e, err
		}
	}
	return e, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// quarantineTail keeps bytes [dm.StartByte, end) of the newest segment file in
// quarantine and then truncates the file at dm.StartByte. Durability: the copy is
// written and fsynced, the manifest line appended and fsynced, and only then is the
// segment file truncated and fsynced; a crash in between leaves the data in place.
func quarantineTail(dataDir string, d datadir.LogDir, dm damage, lastOffset uint64, queue, partition string, now time.Time) (quarantineEntry, error) {
	src := filepath.Join(d.Path, dm.File)
	in, err := os.Open(src)
	if err != nil {
		return quarantineEntry{}, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return quarantineEntry{}, err
	}
	qdir := filepath.Join(dataDir, dirQuarantine, d.Rel)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return quarantineEntry{}, err
	}
	name := fmt.Sprintf("%s.from-%d", dm.File, dm.StartByte)
	dst := filepath.Join(qdir, name)
	for n := 1; ; n++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = filepath.Join(qdir, fmt.Sprintf("%s.%d", name, n))
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return quarantineEntry{}, err
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, dm.StartByte, st.Size()-dm.StartByte)); err != nil {
		out.Close()
		return quarantineEntry{}, err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return quarantineEntry{}, err
	}
	if err := out.Close(); err != nil {
		return quarantineEntry{}, err
	}
	rel, _ := filepath.Rel(dataDir, dst)
	e := quarantineEntry{
		AtRFC3339: now.UTC().Format(time.RFC3339), PartitionID: datadir.IDString(d.ID), Queue: queue, Partition: partition,
		Original: filepath.Join(d.Rel, dm.File), Moved: rel, StartByte: dm.StartByte, EndByte: st.Size(),
		FirstOffset: dm.FirstOffset, LastOffset: max(lastOffset, dm.LastOffset),
		Reason: dm.Reason + " (bytes from StartByte to the end of the file were copied here, then cut from the log)",
	}
	if err := appendManifest(dataDir, e); err != nil {
		return e, err
	}
	if err := truncateFile(src, dm.StartByte); err != nil {
		return e, err
	}
	for _, dir := range []string{qdir, filepath.Join(dataDir, dirQuarantine)} {
		if err := syncDir(dir); err != nil {
			return e, err
		}
	}
	return e, nil
}

// appendManifest appends one line to the quarantine manifest and fsyncs it.
func appendManifest(dataDir string, e quarantineEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	mf, err := os.OpenFile(filepath.Join(dataDir, dirQuarantine, manifestName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := mf.Write(append(line, '\n')); err != nil {
		mf.Close()
		return err
	}
	if err := mf.Sync(); err != nil {
		mf.Close()
		return err
	}
	return mf.Close()
}
