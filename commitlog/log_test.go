package commitlog

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

const testDir = "/data/commitlog"

func open(t testing.TB, fsys vfs.FS, opts Options) (*Log, *Recovery) {
	t.Helper()
	opts.FS = fsys
	if opts.FileBytes == 0 {
		opts.FileBytes = 4 << 10
	}
	l, rec, err := Open(testDir, opts)
	require.NoError(t, err)
	return l, rec
}

func payload(i int) []byte {
	return []byte(fmt.Sprintf("entry-%04d-%s", i, bytes.Repeat([]byte{'x'}, i%37)))
}

func appendWait(t testing.TB, l *Log, i int) LSN {
	t.Helper()
	tk, err := l.Append(byte(i%7), payload(i))
	require.NoError(t, err)
	require.NoError(t, tk.Wait())
	return tk.LSN
}

func readAll(t testing.TB, l *Log, from LSN) []Entry {
	t.Helper()
	var out []Entry
	require.NoError(t, l.Read(from, func(e Entry) error {
		e.Payload = bytes.Clone(e.Payload)
		out = append(out, e)
		return nil
	}))
	return out
}

func checkEntries(t testing.TB, got []Entry, from, to int) {
	t.Helper()
	require.Len(t, got, to-from+1)
	for k, e := range got {
		i := from + k
		require.Equal(t, LSN(i), e.LSN)
		require.Equal(t, byte(i%7), e.Kind)
		require.Equal(t, payload(i), e.Payload)
	}
}

// Entries are numbered from 1 in Append order, readable after Wait, and
// survive a power loss (strict twin) across several files.
func TestAppendReadCrash(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	l, rec := open(t, m, Options{})
	require.Equal(t, LSN(0), rec.Last)
	for i := 1; i <= 300; i++ {
		require.Equal(t, LSN(i), appendWait(t, l, i))
	}
	checkEntries(t, readAll(t, l, 1), 1, 300)
	checkEntries(t, readAll(t, l, 250), 250, 300)
	require.Greater(t, len(l.files), 3, "4 KiB files: the log rotated")

	l2, rec := open(t, m.Crash(false), Options{})
	require.Equal(t, LSN(300), rec.Last)
	checkEntries(t, readAll(t, l2, 1), 1, 300)
	require.Equal(t, LSN(301), appendWait(t, l2, 301))
	require.NoError(t, l2.Close())
	require.NoError(t, l.Close())
}

// Concurrent appenders share fdatasyncs: fewer syncs than entries.
func TestGroupCommit(t *testing.T) {
	m := vfs.NewMem()
	fy := errorfs.New(m)
	l, _ := open(t, fy, Options{FileBytes: 1 << 20})
	fy.Record()
	var wg sync.WaitGroup
	const n = 400
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/8; i++ {
				tk, err := l.Append(1, []byte("x"))
				if !assert.NoError(t, err) || !assert.NoError(t, tk.Wait()) {
					return // FailNow must not run outside the test's goroutine
				}
			}
		}()
	}
	wg.Wait()
	syncs := 0
	for _, c := range fy.Trace() {
		if c.Op == errorfs.OpSync {
			syncs++
		}
	}
	require.Len(t, readAll(t, l, 1), n)
	require.Less(t, syncs, n, "group commit: %d syncs for %d entries", syncs, n)
	require.NoError(t, l.Close())
}

// A batch torn by a crash (written, never synced) is dropped on Open, its
// bytes kept in quarantine, and the log continues at its LSN.
func TestTornBatchIsCut(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	for i := 1; i <= 5; i++ {
		appendWait(t, l, i)
	}
	w := l.files[len(l.files)-1]
	end := w.end
	require.NoError(t, l.Close())
	data := m.Bytes(w.path)
	// A sixth batch whose second half never reached the disk.
	frame := w.format.WithSeed(w.format.Seed)
	body := appendEntry(make([]byte, batchHead), 6, payload(6))
	putBatchHead(body, 6, 1)
	f, err := frame.Append(nil, body)
	require.NoError(t, err)
	copy(data[end:], f[:len(f)/2])
	m.SetBytes(w.path, data)

	l2, rec := open(t, m, Options{FileBytes: 1 << 20})
	require.Equal(t, record.TailDamaged, rec.Tail, "in preallocated space a torn batch has its full length")
	require.Equal(t, end, rec.CutAt)
	require.Equal(t, bytes.TrimRight(f[:len(f)/2], "\x00"), m.Bytes(rec.KeptAt), "the non-zero bytes are kept")
	require.Equal(t, LSN(5), rec.Last)
	require.Equal(t, LSN(6), appendWait(t, l2, 6))
	checkEntries(t, readAll(t, l2, 1), 1, 6)
	require.NoError(t, l2.Close())
}

// A payload that carries a batch frame verifies only under the salt it was
// made with: a torn batch holding one is still a torn batch, never
// "damage followed by a verified batch".
func TestForgedFrameInPayloadDoesNotFoolResync(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	appendWait(t, l, 1)
	w := l.files[len(l.files)-1]
	end := w.end
	// A forged batch 3 under the unsalted format, and one under a guessed salt.
	forged := appendEntry(make([]byte, batchHead), 1, []byte("forged"))
	putBatchHead(forged, 3, 1)
	f1, _ := batchFormat.Append(nil, forged)
	f2, _ := batchFormat.WithSeed(42).Append(nil, forged)
	evil := append(append(bytes.Repeat([]byte{0xEE}, 40), f1...), f2...)
	tk, err := l.Append(9, evil)
	require.NoError(t, err)
	require.NoError(t, tk.Wait())
	require.NoError(t, l.Close())
	data := m.Bytes(w.path)
	data[end+record.HeaderSize+2] ^= 0xFF // tear batch 2 in its head
	m.SetBytes(w.path, data)
	l2, rec := open(t, m, Options{FileBytes: 1 << 20})
	require.Equal(t, record.TailDamaged, rec.Tail, "a torn batch, not corruption")
	require.Equal(t, LSN(1), rec.Last)
	require.NoError(t, l2.Close())
}

// Damage with a verified batch after it is corruption under sync always:
// Open refuses and changes nothing.
func TestMidFileDamageRefused(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	var ends []int64
	for i := 1; i <= 3; i++ {
		appendWait(t, l, i)
		ends = append(ends, l.files[len(l.files)-1].end)
	}
	path := l.files[len(l.files)-1].path
	require.NoError(t, l.Close())
	data := m.Bytes(path)
	data[ends[0]+record.HeaderSize+1] ^= 1
	m.SetBytes(path, data)
	_, _, err := Open(testDir, Options{FS: m, FileBytes: 1 << 20})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, data, m.Bytes(path), "nothing changed")
	// Under sync interval the same bytes are torn unsynced batches: cut.
	l3, rec := open(t, m, Options{FileBytes: 1 << 20, Sync: SyncInterval})
	require.Equal(t, LSN(1), rec.Last)
	require.NoError(t, l3.Close())
}

// A full disk fails Append up front (nothing appended) when no file can be
// prepared, and appends go on once space is freed.
func TestNoSpace(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{})
	m.SetCapacity(m.Used() + 100) // the spare is prepared already; no room for another
	i := 1
	var err error
	for ; i < 1000; i++ {
		var tk Ticket
		if tk, err = l.Append(1, payload(i)); err != nil {
			break
		}
		require.NoError(t, tk.Wait())
	}
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, l.Err(), ErrNoSpace)
	last := l.NextLSN() - 1
	m.SetCapacity(0)
	tk, err := l.Append(1, payload(i))
	require.NoError(t, err, "space is back")
	require.NoError(t, tk.Wait())
	require.Equal(t, last+1, tk.LSN, "no LSN was lost to the failed appends")
	require.NoError(t, l.Close())
}

// A failed fdatasync fails the log for good.
func TestFailedSyncIsSticky(t *testing.T) {
	fy := errorfs.New(vfs.NewMem())
	l, _ := open(t, fy, Options{FileBytes: 1 << 20})
	appendWait(t, l, 1)
	fy.Inject(errorfs.Fault{Op: errorfs.OpSync, Under: ".wal", Count: 1, Err: unix.EIO})
	tk, err := l.Append(1, payload(2))
	require.NoError(t, err)
	require.ErrorIs(t, tk.Wait(), ErrFailed)
	_, err = l.Append(1, payload(3))
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, l.Err(), ErrFailed)
	l.Close()
}

// Truncation drops whole files below the LSN and keeps everything after.
func TestTruncateBefore(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	l, _ := open(t, m, Options{})
	for i := 1; i <= 200; i++ {
		appendWait(t, l, i)
	}
	nfiles := len(l.files)
	require.NoError(t, l.TruncateBefore(150))
	first := l.FirstLSN()
	require.LessOrEqual(t, first, LSN(150))
	require.Less(t, len(l.files), nfiles)
	checkEntries(t, readAll(t, l, first), int(first), 200)
	l2, rec := open(t, m.Crash(false), Options{})
	require.Equal(t, first, rec.First)
	require.Equal(t, LSN(200), rec.Last)
	require.NoError(t, l2.Close())
	require.NoError(t, l.Close())
}

// An empty log starts at StartLSN, so LSNs never run backwards when the log
// directory was lost.
func TestStartLSN(t *testing.T) {
	l, _ := open(t, vfs.NewMem(), Options{StartLSN: 1000})
	require.Equal(t, LSN(1000), appendWait(t, l, 1))
	require.NoError(t, l.Close())
}

// A file starts at InitialBytes and is extended ahead of the batches
// (doubling) up to FileBytes, then the log rotates.
func TestFilesGrowThenRotate(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{InitialBytes: 4 << 10, FileBytes: 64 << 10})
	first := l.files[0]
	require.Equal(t, int64(4<<10), first.size.Load())
	for i := 1; i <= 3000; i++ {
		appendWait(t, l, i)
	}
	require.Equal(t, int64(64<<10), first.size.Load(), "the first file grew to FileBytes")
	require.Greater(t, len(l.files), 1, "then the log rotated")
	require.NoError(t, l.Close())
	l2, rec := open(t, m, Options{InitialBytes: 4 << 10, FileBytes: 64 << 10})
	require.Equal(t, LSN(3000), rec.Last)
	checkEntries(t, readAll(t, l2, 1), 1, 3000)
	require.NoError(t, l2.Close())
}

// Truncating past every entry seals the newest file: it is dropped too, and
// a restart finds nothing to replay and numbers on.
func TestTruncateEverything(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	for i := 1; i <= 10; i++ {
		appendWait(t, l, i)
	}
	require.NoError(t, l.TruncateBefore(11))
	require.Empty(t, readAll(t, l, 1))
	require.Equal(t, LSN(11), l.FirstLSN())
	require.Equal(t, LSN(11), appendWait(t, l, 11))
	require.NoError(t, l.TruncateBefore(12))
	require.NoError(t, l.Close())
	l2, rec := open(t, m.Crash(false), Options{FileBytes: 1 << 20})
	require.Equal(t, LSN(0), rec.Last)
	require.Empty(t, readAll(t, l2, 1))
	require.Equal(t, LSN(12), appendWait(t, l2, 12))
	require.NoError(t, l2.Close())
}

// The truncation point survives a restart: entries below it that share the
// newest file with later ones are not read again.
func TestTruncationPointPersists(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	for i := 1; i <= 10; i++ {
		appendWait(t, l, i)
	}
	require.NoError(t, l.TruncateBefore(7))
	require.Equal(t, LSN(7), l.FirstLSN())
	checkEntries(t, readAll(t, l, 1), 7, 10)
	require.NoError(t, l.Close())
	l2, rec := open(t, m.Crash(false), Options{FileBytes: 1 << 20})
	require.Equal(t, LSN(7), rec.First)
	require.Equal(t, LSN(7), l2.FirstLSN())
	checkEntries(t, readAll(t, l2, 1), 7, 10)
	require.NoError(t, l2.Close())
}

// Inspect reads what Open would keep without writing anything, and reports a
// torn tail instead of zeroing it.
func TestInspect(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{FileBytes: 1 << 20})
	for i := 1; i <= 5; i++ {
		appendWait(t, l, i)
	}
	require.NoError(t, l.TruncateBefore(3))
	w := l.files[len(l.files)-1]
	end := w.end
	require.NoError(t, l.Close())
	data := m.Bytes(w.path)
	copy(data[end:], []byte("CMWBgarbage-garbage-garbage"))
	m.SetBytes(w.path, data)
	before := m.Bytes(w.path)
	var got []Entry
	in, err := Inspect(m, testDir, func(e Entry) error {
		e.Payload = bytes.Clone(e.Payload)
		got = append(got, e)
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, in.Err)
	checkEntries(t, got, 3, 5)
	require.Equal(t, LSN(3), in.Start)
	require.Equal(t, record.TailDamaged, in.Tail)
	require.Equal(t, end, in.TailStart)
	require.Equal(t, before, m.Bytes(w.path), "nothing written")
}

// A disk without room for the file's doubling still takes appends that fit
// (the doubling is only ahead of need), and the log reports no failure once
// the small growth succeeds: a broker whose disk was freed a little serves
// again (acceptance 8-integrity, the full-disk check).
func TestNoSpaceForDoublingGrowsLess(t *testing.T) {
	m := vfs.NewMem()
	l, _ := open(t, m, Options{FileBytes: 64 << 20, InitialBytes: 64 << 10})
	body := bytes.Repeat([]byte{'p'}, 4<<10)
	grow := func(beyond int64) int64 {
		t.Helper()
		for n := 0; l.files[0].size.Load() <= beyond; n++ {
			tk, err := l.Append(1, body)
			require.NoError(t, err, "append %d", n)
			require.NoError(t, tk.Wait())
			require.Less(t, n, 1000, "the file never grew")
		}
		return l.files[0].size.Load()
	}
	grow(512 << 10) // by doublings
	var size0 int64
	require.Eventually(t, func() bool { // the spare and any extension ahead are done
		l.mu.Lock()
		defer l.mu.Unlock()
		w := l.files[0]
		size0 = w.size.Load()
		return l.spare != nil && size0-w.end-w.reserved >= size0/2
	}, 5*time.Second, time.Millisecond)
	m.SetCapacity(m.Used() + 512<<10) // room for 64 KiB steps, not for the doubling to 2 MiB
	got := grow(size0)
	require.LessOrEqual(t, got, size0+512<<10, "grew in 64 KiB steps, not by doubling")
	require.Zero(t, (got-size0)%(64<<10), "grew in 64 KiB steps: %d", got-size0)
	require.NoError(t, l.Err(), "nothing failed: no full disk reported")
	require.NoError(t, l.Close())
}
