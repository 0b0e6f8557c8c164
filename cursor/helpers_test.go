package cursor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/vfs"
)

func pid(b byte) [16]byte { return [16]byte{0: 0x01, 15: b} }

// The test log's errors: errLogFull is retryable (as commitlog.ErrNoSpace),
// errLogFailed is not (as commitlog.ErrFailed).
var (
	errLogFull   = errors.New("test log: no space")
	errLogFailed = errors.New("test log: failed")
)

// memEntry is one entry of a memLog.
type memEntry struct {
	LSN        uint64
	Body       []byte
	Checkpoint bool // else an entry of another kind (a push), which the engine never sees
	durable    bool // its wait returned nil
}

// memLog is the in-memory twin of the commit log: entries get increasing
// LSNs, checkpoints and others alike. Crash returns what survives a crash:
// every entry whose wait returned nil, and of the others those keep picks.
type memLog struct {
	mu        sync.Mutex
	next      uint64
	entries   []memEntry
	appendErr error            // AppendCheckpoint fails with it while set
	waitErr   error            // waits fail with it while set (the entry stays appended)
	onAppend  func(lsn uint64) // called after an append, outside mu
}

// newMemLog is an empty log whose first LSN is first, or the log left by a
// crash (entries in LSN order), continuing after its last entry.
func newMemLog(first uint64, survivors []memEntry) *memLog {
	l := &memLog{next: first}
	for _, en := range survivors {
		en.durable = true
		l.entries = append(l.entries, en)
		l.next = max(l.next, en.LSN+1)
	}
	return l
}

func (l *memLog) AppendCheckpoint(body []byte) (lsn.Ticket, error) {
	l.mu.Lock()
	if err := l.appendErr; err != nil {
		l.mu.Unlock()
		return lsn.Ticket{}, fmt.Errorf("append: %w", err)
	}
	n := l.next
	l.next++
	l.entries = append(l.entries, memEntry{LSN: n, Body: append([]byte(nil), body...), Checkpoint: true})
	hook := l.onAppend
	l.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return lsn.NewTicket(lsn.LSN(n), lsn.WaitFunc(func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.waitErr != nil {
			return fmt.Errorf("wait: %w", l.waitErr)
		}
		// Found by LSN, not by index: truncateBefore may have dropped
		// entries in front of it since the append.
		for i := range l.entries {
			if l.entries[i].LSN == n {
				l.entries[i].durable = true
			}
		}
		return nil
	})), nil
}

func (l *memLog) Retryable(err error) bool { return errors.Is(err, errLogFull) }

// other appends n durable entries of another kind (pushes): they take LSNs.
func (l *memLog) other(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.entries = append(l.entries, memEntry{LSN: l.next, durable: true})
		l.next++
	}
}

func (l *memLog) setAppendErr(err error) {
	l.mu.Lock()
	l.appendErr = err
	l.mu.Unlock()
}

func (l *memLog) setWaitErr(err error) {
	l.mu.Lock()
	l.waitErr = err
	l.mu.Unlock()
}

// truncateBefore drops every entry below lsn (the broker's TruncateBefore).
func (l *memLog) truncateBefore(lsn uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for i < len(l.entries) && l.entries[i].LSN < lsn {
		i++
	}
	l.entries = append([]memEntry(nil), l.entries[i:]...)
}

// checkpoints counts the checkpoint entries held.
func (l *memLog) checkpoints() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, en := range l.entries {
		if en.Checkpoint {
			n++
		}
	}
	return n
}

// crash returns the entries that survive a crash now: every durable one,
// and those of the others keep picks (nil: none).
func (l *memLog) crash(keep func(memEntry) bool) []memEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []memEntry
	for _, en := range l.entries {
		if en.durable || keep != nil && keep(en) {
			out = append(out, en)
		}
	}
	return out
}

// keepRandom keeps each entry that is not durable with probability 1/2.
func keepRandom(rng *rand.Rand) func(memEntry) bool {
	return func(memEntry) bool { return rng.IntN(2) == 0 }
}

// recoverT opens dir on fsys as the broker recovers: Open, then every
// checkpoint of survivors with an LSN >= ReplayFrom through ApplyCheckpoint,
// then Start with a log continuing after the survivors.
func recoverT(t testing.TB, fsys vfs.FS, dir string, survivors []memEntry) (*Engine, *memLog, *RecoveryReport) {
	t.Helper()
	log := newMemLog(1, survivors)
	e, rep, err := Open(dir, Options{FS: fsys, Log: log, CheckpointInterval: time.Hour})
	require.NoError(t, err)
	for _, en := range survivors {
		if en.Checkpoint && en.LSN >= rep.ReplayFrom {
			require.NoError(t, e.ApplyCheckpoint(en.Body))
		}
	}
	e.Start()
	t.Cleanup(func() { _ = e.Close() })
	return e, log, rep
}

// startT opens an engine on a fresh strict twin with a fresh log.
func startT(t testing.TB) (*Engine, *memLog, *vfs.Mem) {
	t.Helper()
	m := vfs.NewStrictMem("/data")
	log := newMemLog(1, nil)
	e, _, err := Open("/data/cursor", Options{FS: m, Log: log, CheckpointInterval: time.Hour})
	require.NoError(t, err)
	e.Start()
	t.Cleanup(func() { _ = e.Close() })
	return e, log, m
}

// dump is everything an Engine holds, in comparable form.
type dump struct {
	States map[Key]lease.State
	Subs   map[subKey]Subscription
}

func dumpOf(e *Engine) dump {
	d := dump{States: map[Key]lease.State{}, Subs: map[subKey]Subscription{}}
	e.Range(func(k Key, s lease.State) bool { d.States[k] = s; return true })
	e.RangeSubscriptions(func(q, g string, s Subscription) bool { d.Subs[subKey{q, g}] = s; return true })
	return d
}

// listMem lists the snapshot and old-format files of dir on fsys.
func listMem(t testing.TB, fsys vfs.FS, dir string) dirFiles {
	t.Helper()
	files, err := (&Engine{fs: fsys, dir: dir}).listFiles()
	require.NoError(t, err)
	return files
}

// keyIn returns a key whose shard is i.
func keyIn(i int, group string) Key {
	for n := 0; ; n++ {
		k := Key{Partition: [16]byte{0: 0x02, 1: byte(n >> 8), 2: byte(n)}, Group: group}
		if shardIndex(k) == i {
			return k
		}
	}
}

// lastLSN is the LSN of the newest entry (0 = none yet).
func (l *memLog) lastLSN() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// v2JournalName is the name a format 2 writer gave its journal files (format_v2.go reads
// them by pattern; only tests make them).
func v2JournalName(seq uint64) string { return fmt.Sprintf("journal-%016x.v2.log", seq) }
