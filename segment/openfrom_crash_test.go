package segment

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// hookFS calls before ahead of every call that changes the disk (creating opens,
// writes, syncs, truncations, maps, directory changes): a test takes a crash
// snapshot there, so it crashes the scenario at every boundary in one run.
type hookFS struct {
	vfs.FS
	before func()
}

func (h *hookFS) OpenFile(name string, flag int) (vfs.File, error) {
	if flag&os.O_CREATE != 0 {
		h.before()
	}
	f, err := h.FS.OpenFile(name, flag)
	if err != nil {
		return nil, err
	}
	return hookFile{f, h}, nil
}

func (h *hookFS) OpenMapped(name string) (vfs.Mapping, error) {
	h.before()
	m, err := h.FS.OpenMapped(name)
	if err != nil {
		return nil, err
	}
	return hookMapping{m, h}, nil
}

func (h *hookFS) MkdirAll(dir string) error   { h.before(); return h.FS.MkdirAll(dir) }
func (h *hookFS) Mkdir(dir string) error      { h.before(); return h.FS.Mkdir(dir) }
func (h *hookFS) Remove(name string) error    { h.before(); return h.FS.Remove(name) }
func (h *hookFS) RemoveAll(name string) error { h.before(); return h.FS.RemoveAll(name) }
func (h *hookFS) Rename(oldname, newname string) error {
	h.before()
	return h.FS.Rename(oldname, newname)
}
func (h *hookFS) SyncDir(dir string) error { h.before(); return h.FS.SyncDir(dir) }
func (h *hookFS) SyncFS(dir string) error  { h.before(); return h.FS.SyncFS(dir) }

type hookFile struct {
	vfs.File
	h *hookFS
}

func (f hookFile) Write(p []byte) (int, error) { f.h.before(); return f.File.Write(p) }
func (f hookFile) WriteAt(p []byte, off int64) (int, error) {
	f.h.before()
	return f.File.WriteAt(p, off)
}
func (f hookFile) Sync() error               { f.h.before(); return f.File.Sync() }
func (f hookFile) Truncate(size int64) error { f.h.before(); return f.File.Truncate(size) }

type hookMapping struct {
	vfs.Mapping
	h *hookFS
}

func (m hookMapping) Map(size int64) ([]byte, error) { m.h.before(); return m.Mapping.Map(size) }

// crashModel is what the scenario's commit log holds at one instant: every append's
// segment, in order, and keepBelow, the NextOffset taken before the last Flush that
// returned nil (the broker truncates its commit log there; every offset below it is
// synced).
type crashModel struct {
	segs      [][]byte
	recs      []Record
	keepBelow uint64
}

// crashPoint is the disk at one boundary, with the model as it was then.
type crashPoint struct {
	power  *vfs.Mem          // a power loss: what was synced, names included
	now    map[string][]byte // every file as the process last left it (kill -9)
	nSegs  int
	keep   uint64
	call   int
	mapped bool
}

const crashDir = "/data/p"

// crashOpts is the log's configuration in the crash scenario: rotation every few
// segments, deferred; compression on.
var crashOpts = Options{DeferRotationSync: true, MaxFileBytes: 700, Codec: CodecS2, MinCompressBytes: -1}

// runCrashScenario drives a log the way the issue-14 broker does (append with AppendTo,
// keep the bytes, Mark, Flush now and then; retention, dedup loads and releases along
// the way) on the strict twin, and returns a crash point for every disk-changing call.
func runCrashScenario(t *testing.T) (*crashModel, []crashPoint, map[string][]byte) {
	mem := vfs.NewStrictMem("/data")
	m := &crashModel{keepBelow: 1}
	var points []crashPoint
	hook := &hookFS{FS: mem}
	hook.before = func() {
		now := map[string][]byte{}
		names, _ := mem.List(crashDir)
		for _, n := range names {
			now[n] = mem.Bytes(crashDir + "/" + n)
		}
		mapped := len(points)%2 == 0
		points = append(points, crashPoint{power: mem.Crash(mapped), now: now, nSegs: len(m.segs), keep: m.keepBelow, call: len(points), mapped: mapped})
	}
	opts := crashOpts
	opts.FS = hook
	l, _, err := OpenFrom(crashDir, opts, 1)
	require.NoError(t, err)
	c := NewCommitter()
	for i := 0; i < 36; i++ {
		rs := recs(10*i, 1+i%3, 50+17*(i%5))
		_, seg, err := l.AppendTo(nil, int64(1000+100*(i/2)), rs)
		require.NoError(t, err)
		m.segs, m.recs = append(m.segs, seg), append(m.recs, rs...)
		c.Mark(l)
		switch {
		case i%5 == 4:
			next := l.NextOffset()
			require.NoError(t, c.Flush())
			m.keepBelow = next
		case i == 11 || i == 25:
			_, _, _, err := l.FindTransaction(rs[0].TransactionID) // loads the dedup index
			require.NoError(t, err)
		case i == 17:
			require.True(t, l.Release(), "a release syncs and writes the dedup entries")
		case i == 22:
			_, _, err := l.DeleteFilesBefore(m.keepBelow) // retention, behind the synced offsets only
			require.NoError(t, err)
		}
	}
	final := map[string][]byte{}
	names, _ := mem.List(crashDir)
	for _, n := range names {
		if _, ok := parseSegName(n); ok && len(mem.Bytes(crashDir+"/"+n)) > 0 {
			final[n] = mem.Bytes(crashDir + "/" + n)
		}
	}
	return m, points, final
}

// mixedDisk builds what the machine could come back with: every synced byte and name,
// and, of what was never synced, whatever rng picks per file: nothing, everything, a
// prefix, or everything with a hole of zeros or garbage in the unsynced part (the page
// cache writes pages back in any order).
func mixedDisk(p crashPoint, rng *rand.Rand) *vfs.Mem {
	out := p.power.Crash(true)
	_ = out.MkdirAll(crashDir)
	for name, now := range p.now {
		path := crashDir + "/" + name
		durable := out.Bytes(path)
		if durable != nil && !bytes.HasPrefix(now, durable) {
			continue // truncated since its last sync: keep the synced bytes
		}
		b := append([]byte(nil), now...)
		from := len(durable)
		switch rng.Intn(5) {
		case 0:
			if durable == nil {
				continue // the name never reached the disk
			}
			b = durable
		case 1: // everything the process wrote
		case 2:
			b = b[:from+rng.Intn(len(b)-from+1)]
		case 3, 4:
			if len(b) > from {
				at := from + rng.Intn(len(b)-from)
				n := 1 + rng.Intn(min(len(b)-at, 300))
				for k := at; k < at+n; k++ {
					if rng.Intn(4) == 3 {
						b[k] = byte(rng.Int())
					} else {
						b[k] = 0
					}
				}
			}
		}
		out.SetBytes(path, b)
	}
	return out
}

// recoverAndCheck opens the crashed disk below the model's keepBelow, replays the
// model's segments from there as the broker does, and checks the log holds exactly
// every append of the model, in files identical to the scenario's.
func recoverAndCheck(t *testing.T, disk *vfs.Mem, m *crashModel, p crashPoint, want map[string][]byte, what string) {
	t.Helper()
	opts := crashOpts
	opts.FS = disk
	l, rep, err := OpenFrom(crashDir, opts, p.keep)
	require.NoError(t, err, "%s: OpenFrom(%d)", what, p.keep)
	require.Equal(t, p.keep, l.NextOffset(), what)
	require.Zero(t, rep.TruncatedBytes, "%s: nothing below keepBelow is torn", what)
	for _, seg := range m.segs[:p.nSegs] {
		h, _ := parseHeader(seg)
		if h.base < p.keep {
			continue // the commit log was truncated behind it
		}
		first, err := l.AppendSegment(seg)
		require.NoError(t, err, what)
		require.Equal(t, h.base, first, what)
	}
	n := 0
	for _, seg := range m.segs[:p.nSegs] {
		h, _ := parseHeader(seg)
		n += int(h.count)
	}
	require.Equal(t, uint64(n+1), l.NextOffset(), what)
	first := l.FirstOffset()
	got := readAll(t, l, first)
	require.Len(t, got, n-int(first)+1, what)
	for i, msg := range got {
		require.Equal(t, first+uint64(i), msg.Offset, what)
		requireRecord(t, m.recs[msg.Offset-1], msg)
	}
	for _, k := range []int{n - 1, (n - 1) / 2, int(first) - 1} {
		if k < int(first)-1 || k < 0 || k >= n {
			continue
		}
		off, _, ok, err := l.FindTransaction(m.recs[k].TransactionID)
		require.NoError(t, err, what)
		require.True(t, ok, "%s: dedup of offset %d", what, k+1)
		require.Equal(t, uint64(k+1), off, what)
	}
	require.NoError(t, l.Close())
	names, err := disk.List(crashDir)
	require.NoError(t, err)
	for _, name := range names {
		if _, ok := parseSegName(name); !ok {
			continue
		}
		b := disk.Bytes(crashDir + "/" + name)
		if w, ok := want[name]; ok && len(b) > 0 {
			require.True(t, bytes.HasPrefix(w, b), "%s: %s is a prefix of the scenario's file", what, name)
		}
	}
	again, rep, err := Open(crashDir, opts)
	require.NoError(t, err, what)
	require.False(t, rep.TruncatedBytes > 0, what)
	require.Equal(t, uint64(n+1), again.NextOffset(), what)
	require.NoError(t, again.Close())
}

// Issue 14: with DeferRotationSync, crash the strict twin before every call that
// changes the disk, in an append + rotation + flush + retention sequence; OpenFrom at
// the commit log's keepBelow plus the replay of its segments gives back exactly every
// append, whether the machine lost power (only synced bytes and names), the process was
// killed (every byte written), or the page cache wrote back any mix of pages.
func TestOpenFromAfterCrashAtEveryPoint(t *testing.T) {
	m, points, final := runCrashScenario(t)
	require.Greater(t, len(points), 90, "the scenario has many boundaries")
	rng := rand.New(rand.NewSource(14))
	for _, p := range points {
		what := fmt.Sprintf("crash before call %d (keepBelow %d, %d appends, mapped %v)", p.call, p.keep, p.nSegs, p.mapped)
		recoverAndCheck(t, p.power.Crash(p.mapped), m, p, final, what+", power loss")
		kill := vfs.NewMem()
		_ = kill.MkdirAll(crashDir)
		for name, b := range p.now {
			kill.SetBytes(crashDir+"/"+name, b)
		}
		recoverAndCheck(t, kill, m, p, final, what+", kill -9")
		for k := 0; k < 3; k++ {
			recoverAndCheck(t, mixedDisk(p, rng), m, p, final, fmt.Sprintf("%s, mixed writeback %d", what, k))
		}
	}
}

// Issue 14, two crashes: what OpenFrom cut and removed stays cut after a second power
// loss, even when the next incarnation rotates elsewhere (a larger MaxFileBytes) and
// other records take the cut offsets: a removed file coming back would put stale
// segments below the next keepBelow, stale dedup entries would hide the new ids.
func TestOpenFromCutSurvivesTheNextCrash(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	opts := crashOpts
	opts.FS = mem
	l, _, err := OpenFrom(crashDir, opts, 1)
	require.NoError(t, err)
	c := NewCommitter()
	var segs [][]byte
	var all []Record
	keep := uint64(0)
	for i := 0; len(l.files) < 3; i++ {
		if i == 4 {
			keep = l.NextOffset()
			c.Mark(l)
			require.NoError(t, c.Flush())
			_, _, _, err := l.FindTransaction("x") // load the dedup index: its file gets entries
			require.NoError(t, err)
		}
		rs := recs(10*i, 2, 90)
		_, seg, err := l.AppendTo(nil, int64(i), rs)
		require.NoError(t, err)
		segs, all = append(segs, seg), append(all, rs...)
	}
	require.NoError(t, l.dedup.Flush())
	lostSeg := segs[len(segs)-1] // its commit-log entry never became durable: never acknowledged
	lost, _ := parseHeader(lostSeg)
	require.Greater(t, lost.base, keep)
	newest := segName(l.files[len(l.files)-1].base)

	// Crash 1, kill -9: every byte the process wrote is on disk, but nothing more is synced.
	disk := vfs.NewStrictMem("/data")
	names, _ := mem.List(crashDir)
	for _, n := range names {
		disk.SetBytes(crashDir+"/"+n, mem.Bytes(crashDir+"/"+n))
	}
	opts.FS, opts.MaxFileBytes = disk, 1<<20
	l, rep, err := OpenFrom(crashDir, opts, keep)
	require.NoError(t, err)
	require.Contains(t, rep.Unsynced.Removed, crashDir+"/"+newest)
	require.Positive(t, rep.Unsynced.DedupEntries)
	for _, seg := range segs[:len(segs)-1] {
		if h, _ := parseHeader(seg); h.base >= keep {
			_, err := l.AppendSegment(seg)
			require.NoError(t, err)
		}
	}
	other := recs(999, int(lost.count), 30) // another push takes the lost offsets
	first, err := l.Append(10_000, other)
	require.NoError(t, err)
	require.Equal(t, lost.base, first)
	keep2 := l.NextOffset()
	c.Mark(l)
	require.NoError(t, c.Flush())
	for _, fi := range l.files {
		require.NotEqual(t, newest, segName(fi.base), "this incarnation did not recreate the removed file")
	}
	newestBase, _ := parseSegName(newest)
	require.Less(t, newestBase, keep2, "back after a crash, the removed file would sit below keepBelow")

	// Crash 2, power loss.
	opts.FS = disk.Crash(true)
	l, _, err = OpenFrom(crashDir, opts, keep2)
	require.NoError(t, err)
	want := append(append([]Record(nil), all[:lost.base-1]...), other...)
	got := readAll(t, l, 1)
	require.Len(t, got, len(want))
	for i := range got {
		requireRecord(t, want[i], got[i])
	}
	for i, r := range other {
		off, _, ok, err := l.FindTransaction(r.TransactionID)
		require.NoError(t, err)
		require.True(t, ok, r.TransactionID)
		require.Equal(t, lost.base+uint64(i), off)
	}
	_, _, ok, err := l.FindTransaction(all[lost.base-1].TransactionID)
	require.NoError(t, err)
	require.False(t, ok, "the lost push is gone")
	require.NoError(t, l.Close())
}

// openFromState is a disk on which OpenFrom(7) has everything to do: cut the sealed
// file holding 6, remove the newer file and one of an unsynced rotation with their
// index files, cut dedup.idx.
func openFromState(t *testing.T) *vfs.Mem {
	withIndexFiles(t)
	tf := newTwoFiles(t, Options{})
	m := vfs.NewStrictMem("/p")
	names, err := tf.mem.List("/p")
	require.NoError(t, err)
	for _, n := range names {
		m.SetBytes("/p/"+n, tf.mem.Bytes("/p/"+n))
	}
	m.SetBytes("/p/"+segName(20), tf.segs[4])
	m.SetBytes("/p/"+idxName(20), tf.mem.Bytes("/p/"+idxName(10)))
	return m
}

// segState is a log directory's segment files and the log's next offset: what two
// OpenFrom runs must agree on.
func segState(t *testing.T, m *vfs.Mem) (map[string][]byte, uint64) {
	t.Helper()
	l, _, err := openLogFrom(m, "/p", Options{}, 7)
	require.NoError(t, err)
	next := l.NextOffset()
	require.Len(t, readAll(t, l, 1), 6)
	require.NoError(t, l.Close())
	return segBytes(t, m, "/p"), next
}

// Issue 14: OpenFrom is idempotent under crashes: a crash before any of its calls
// that change the disk, or a failure of any of its calls followed by a crash, leaves a
// directory on which OpenFrom with the same keepBelow gives the same log.
func TestOpenFromIsCrashSafe(t *testing.T) {
	want, wantNext := segState(t, openFromState(t))
	require.Len(t, want, 1, "only the cut first file is left")

	base := openFromState(t)
	var points []*vfs.Mem
	hook := &hookFS{FS: base}
	hook.before = func() { points = append(points, base.Crash(len(points)%2 == 0)) }
	l, _, err := openLogFrom(hook, "/p", Options{}, 7)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.Greater(t, len(points), 8)
	for i, p := range points {
		got, next := segState(t, p)
		require.Equal(t, want, got, "crash before call %d", i)
		require.Equal(t, wantNext, next, "crash before call %d", i)
	}

	rec := errorfs.New(openFromState(t))
	rec.Record()
	l, _, err = openLogFrom(rec, "/p", Options{}, 7)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	trace := rec.Trace()
	for i := range trace {
		m := openFromState(t)
		fs := errorfs.New(m)
		fs.Inject(errorfs.FaultAt(trace, i, fmt.Errorf("injected")))
		if l, _, err := openLogFrom(fs, "/p", Options{}, 7); err == nil {
			_ = l.Close()
		}
		got, next := segState(t, m.Crash(i%2 == 0))
		require.Equal(t, want, got, "call %d (%v) failed, then a crash", i, trace[i])
		require.Equal(t, wantNext, next, "call %d (%v) failed, then a crash", i, trace[i])
		got, next = segState(t, m)
		require.Equal(t, want, got, "call %d (%v) failed, then a retry", i, trace[i])
		require.Equal(t, wantNext, next)
	}
}
