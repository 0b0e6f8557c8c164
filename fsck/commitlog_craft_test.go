package fsck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/index"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// tsLater is a segment timestamp after everything a datadirtest.MemBroker pushes.
var tsLater = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// segAt returns one segment exactly as AppendTo hands it to the commit log,
// holding n records at offsets base..base+n-1 (transactionIds "crafted-<offset>").
func segAt(t *testing.T, base uint64, n int, tsMicros int64) []byte {
	t.Helper()
	l, _, err := segment.Open(t.TempDir(), segment.Options{})
	require.NoError(t, err)
	defer l.Close()
	mk := func(first uint64, n int) []segment.Record {
		out := make([]segment.Record, n)
		for i := range out {
			out[i] = segment.Record{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprintf("crafted-%d", first+uint64(i)), Payload: []byte(`{"crafted":true}`)}
		}
		return out
	}
	if base > 1 {
		_, err := l.Append(tsMicros, mk(1, int(base-1)))
		require.NoError(t, err)
	}
	_, seg, err := l.AppendTo(nil, tsMicros, mk(base, n))
	require.NoError(t, err)
	return seg
}

// walEntry is one entry to append to a crafted commit log.
type walEntry struct {
	kind    byte
	payload []byte
}

func pushEntry(id [16]byte, seg []byte) walEntry {
	return walEntry{walentry.Push, append(append([]byte(nil), id[:]...), seg...)}
}

// appendWAL appends entries to root's commit log (created if missing), durably.
func appendWAL(t *testing.T, root string, entries ...walEntry) {
	t.Helper()
	l, _, err := commitlog.Open(filepath.Join(root, dirCommitLog), commitlog.Options{})
	require.NoError(t, err)
	for _, e := range entries {
		tk, err := l.Append(e.kind, e.payload)
		require.NoError(t, err)
		require.NoError(t, tk.Wait())
	}
	require.NoError(t, l.Close())
}

// Issue 14, "every acknowledged record of the commit log is in its partition file
// after recovery": an entry below the durable end must be the file's segment at its
// offsets byte for byte; an entry past the end of what the file and the entries
// before it hold leaves offsets in neither.
func TestCommitLogAgainstTheFiles(t *testing.T) {
	t.Run("entries below the durable end match the file", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		datadirtest.SetSummary(t, root, m.Parts["p0"], 38) // everything synced, the entries not truncated yet
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{}, kinds(rep), "%+v", rep.Findings)
		assert.Equal(t, int64(0), rep.Totals.CommitLog.OnlyInCommitLog)
	})
	t.Run("a file segment that is not the acknowledged one", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		dir := partDir(root, m.Parts["p0"])
		datadirtest.SetSummary(t, root, m.Parts["p0"], 38)
		at, err := segment.PlanFrom(dir, 37) // the segment of offset 37 starts where a cut at 37 would
		require.NoError(t, err)
		require.NoError(t, os.Truncate(at.File, at.At))
		f, err := os.OpenFile(at.File, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(segAt(t, 37, 1, tsLater))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindCommitLogMismatch}, kinds(rep), "%+v", rep.Findings)
		assert.Equal(t, ExitDamaged, rep.ExitCode)
		got := findOne(t, rep, KindCommitLogMismatch)
		assert.Equal(t, [2]uint64{37, 37}, [2]uint64{got.FirstOffset, got.LastOffset})
		assert.Contains(t, got.Detail, "is not the entry's")
	})
	t.Run("an entry past the end leaves offsets in neither", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		id := m.Parts["p0"]
		cut, err := segment.PlanFrom(partDir(root, id), 31)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(cut.File, cut.At)) // a power loss took the unsynced tail
		require.NoError(t, os.RemoveAll(filepath.Join(root, dirCommitLog)))
		appendWAL(t, root, pushEntry(id, segAt(t, 31, 3, tsLater)), pushEntry(id, segAt(t, 37, 2, tsLater)))
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindMissingOffsets, KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
		got := findOne(t, rep, KindMissingOffsets)
		assert.Equal(t, [2]uint64{34, 36}, [2]uint64{got.FirstOffset, got.LastOffset})
		assert.Contains(t, got.Detail, "the log ends at offset 33 but the commit log continues at 37")
		assert.Equal(t, "3 records (offsets 31-33) are only in the commit log: the server appends them to the log at start", findOne(t, rep, KindUnsyncedTail).Detail)
	})
	t.Run("a partition whose directory a power loss took", func(t *testing.T) {
		m := datadirtest.NewMemBroker(t)
		m.Push("orders", "p0", 4, 2)
		root := m.Killed()
		require.NoError(t, os.RemoveAll(partDir(root, m.Parts["p0"])))
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindUnsyncedTail}, kinds(rep), "nothing of it was synced: the server makes it again (%+v)", rep.Findings)
		assert.Equal(t, ExitClean, rep.ExitCode)
	})
	t.Run("a partition directory lost after it was synced", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		require.NoError(t, os.RemoveAll(partDir(root, m.Parts["p1"])))
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindMissingOffsets, KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
		got := findOne(t, rep, KindMissingOffsets)
		assert.Equal(t, [2]uint64{1, 12}, [2]uint64{got.FirstOffset, got.LastOffset})
		assert.Equal(t, "p1", got.Partition)
	})
}

// newestWAL returns the path of the commit log's newest file and its logical end
// (past its last non-zero byte: batches end in a checksum, never all zeros).
func newestWAL(t *testing.T, root string) (string, int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, dirCommitLog, "*.wal"))
	require.NoError(t, err)
	var real []string
	for _, n := range names {
		if !bytes.HasPrefix([]byte(filepath.Base(n)), []byte("spare")) {
			real = append(real, n)
		}
	}
	require.NotEmpty(t, real)
	sort.Strings(real)
	path := real[len(real)-1]
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, int64(len(bytes.TrimRight(b, "\x00")))
}

// Issue 14: the commit log's own damage. A torn last batch (its fdatasync never
// returned) is repairable, and --repair does what the server's start does: the bytes
// are kept in quarantine/commitlog/ and zeroed; after it the check is clean and the
// server recovers every acknowledged message. Damage with a verified batch after it
// needs a person.
func TestCommitLogDamage(t *testing.T) {
	t.Run("a torn last batch", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		path, end := newestWAL(t, root)
		datadirtest.Overwrite(t, path, end+64, append([]byte("CMWB\xff\x00\x00\x00"), bytes.Repeat([]byte{7}, 40)...))
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindCommitLogTornTail, KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
		assert.Equal(t, ExitRepairable, rep.ExitCode)
		torn := findOne(t, rep, KindCommitLogTornTail)
		assert.Equal(t, filepath.Join(dirCommitLog, filepath.Base(path)), torn.File)
		assert.Equal(t, end+64+48, torn.EndByte)

		rep = runOn(t, root, ModeRepair)
		assert.True(t, findOne(t, rep, KindCommitLogTornTail).Repaired, "%+v", rep.Findings)
		kept, err := filepath.Glob(filepath.Join(root, dirQuarantine, dirCommitLog, "*"))
		require.NoError(t, err)
		assert.Len(t, kept, 1, "the torn bytes are kept")
		rep = runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindUnsyncedTail}, kinds(rep))
		assert.Equal(t, ExitClean, rep.ExitCode)
		assertServerHolds(t, root, "orders", map[string]int{"p0": 37, "p1": 12})
		_ = m
	})
	t.Run("damage before a verified batch", func(t *testing.T) {
		_, root := datadirtest.Scenario(t)
		path, _ := newestWAL(t, root)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		first := bytes.Index(b, []byte("CMWB"))
		require.Greater(t, first, 0)
		datadirtest.Overwrite(t, path, int64(first+30), []byte{b[first+30] ^ 0x55})
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, ExitDamaged, rep.ExitCode)
		got := findingsOf(rep, KindCommitLogCorrupt)
		require.Len(t, got, 1, "%+v", rep.Findings)
		assert.Equal(t, int64(first), got[0].StartByte)
		assert.Contains(t, got[0].Detail, "a verified batch follows")
	})
}

// A flipped byte in the commit log (not its torn tail) leaves its later
// entries unread, so fsck cannot tell whether they hold the bytes a log's
// files have past their synced length: those are acknowledged pushes the
// commit log would replay, not a tail to cut. --repair must leave every
// partition file as it is (before, it cut them as "never acknowledged").
func TestCommitLogDamageKeepsUnsyncedTails(t *testing.T) {
	_, root := datadirtest.Scenario(t)
	segs, err := filepath.Glob(filepath.Join(root, dirPartitions, "*", "*.seg"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	before := map[string][]byte{}
	for _, p := range segs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		before[p] = b
	}
	path, _ := newestWAL(t, root)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	first := bytes.Index(b, []byte("CMWB"))
	require.Greater(t, first, 0)
	datadirtest.Overwrite(t, path, int64(first+30), []byte{b[first+30] ^ 0x55})

	rep := runOn(t, root, ModeCheck)
	assert.Equal(t, ExitDamaged, rep.ExitCode)
	damage := findOne(t, rep, KindCommitLogCorrupt)
	assert.Contains(t, damage.Detail, "so acknowledged entries from the damage on are unreadable", "no entry before the damage was read: not \"after LSN 0\"")
	tails := findingsOf(rep, KindUnsyncedTail)
	require.NotEmpty(t, tails, "%+v", rep.Findings)
	for _, f := range tails {
		assert.Equal(t, SeverityInfo, f.Severity, "%+v", f)
		assert.Empty(t, f.Repair)
		assert.Contains(t, f.Detail, "the commit log is damaged")
		assert.NotContains(t, f.Detail, "never acknowledged")
	}

	rep = runOn(t, root, ModeRepair)
	assert.Equal(t, ExitDamaged, rep.ExitCode)
	for p, want := range before {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, got, "--repair keeps %s as it is", p)
	}
}

// assertServerHolds opens the real broker on root (the server's own recovery) and
// drains queue q from the start, checking how many messages each partition has.
func assertServerHolds(t *testing.T, root, q string, want map[string]int) {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: root, Sync: "always", Logger: zerolog.Nop(), MaintenanceInterval: -1})
	require.NoError(t, err)
	defer b.Close()
	got := map[string]int{}
	for range 100 {
		res, err := b.Pop(context.Background(), broker.PopRequest{Queue: q, Group: "verify", Batch: 1000, Partitions: 100, AutoAck: true, SubscriptionMode: "all"})
		require.NoError(t, err)
		for _, msg := range res.Messages {
			got[msg.Partition]++
		}
		n := len(res.Messages)
		res.Release()
		if n == 0 {
			break
		}
	}
	assert.Equal(t, want, got)
}

// captureLog is a cursor.Log that keeps the checkpoint bodies the engine writes.
type captureLog struct {
	lsn    uint64
	bodies [][]byte
}

func (l *captureLog) AppendCheckpoint(b []byte) (lsn.Ticket, error) {
	l.lsn++
	l.bodies = append(l.bodies, append([]byte(nil), b...))
	return lsn.Durable(lsn.LSN(l.lsn)), nil
}

func (*captureLog) Retryable(error) bool { return false }

// checkpointBody returns a cursor checkpoint body that sets key's state.
func checkpointBody(t *testing.T, k cursor.Key, s lease.State) []byte {
	t.Helper()
	log := &captureLog{}
	e, _, err := cursor.Open(t.TempDir(), cursor.Options{Log: log})
	require.NoError(t, err)
	e.Start()
	e.Set(k, s)
	require.NoError(t, e.Close())
	for _, b := range log.bodies {
		if len(b) > 1 {
			return b
		}
	}
	t.Fatal("no checkpoint body")
	return nil
}

// Issue 14: a cursor the commit log's checkpoints moved past the high-water mark is
// found (the snapshot alone would say it is fine), and --repair clamps it in a new
// snapshot that covers the commit log's checkpoints, so the server does not move it
// back past the end.
func TestCursorPastEndInTheCommitLog(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	k := cursor.Key{Partition: m.Parts["p0"], Group: "g2"}
	appendWAL(t, root, walEntry{walentry.Checkpoint, checkpointBody(t, k, lease.State{Committed: 900})})
	rep := runOn(t, root, ModeCheck)
	got := findOne(t, rep, KindCursorPastEnd)
	assert.Equal(t, [2]uint64{38, 900}, [2]uint64{got.FirstOffset, got.LastOffset})
	assert.Equal(t, ExitRepairable, rep.ExitCode)

	rep = runOn(t, root, ModeRepair)
	assert.True(t, findOne(t, rep, KindCursorPastEnd).Repaired, "%+v", rep.Findings)
	rep = runOn(t, root, ModeCheck)
	assert.Equal(t, []Kind{KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
	cur, err := readCursors(filepath.Join(root, dirCursor), func(from uint64, fn func(uint64, []byte) error) error {
		return datadir.EachCheckpoint(root, from, fn)
	})
	require.NoError(t, err)
	for _, e := range cur.Entries {
		if e.Group == "g2" {
			assert.Equal(t, uint64(37), e.State.Committed)
		}
	}
}

// Issue 14: --repair reopens a log written behind the commit log the way the server
// does (segment.OpenFrom at its durable end), never as a plain log whose unsynced
// tail it would judge: afterwards the check is clean and the server recovers every
// acknowledged message.
func TestRepairBelowTheCommitLog(t *testing.T) {
	m, root := datadirtest.Scenario(t)
	dir := partDir(root, m.Parts["p0"])
	cut, err := segment.PlanFrom(dir, 31)
	require.NoError(t, err)
	datadirtest.Overwrite(t, cut.File, cut.At+10, bytes.Repeat([]byte{0xAB}, 60)) // unsynced garbage, valid segments after it
	// A log this small keeps its dedup table in memory (no dedup.idx): give it
	// one, an empty header, as a larger log's load would have written.
	var hdr [index.DedupHeaderSize]byte
	index.PutDedupHeader(hdr[:], 0)
	f, err := os.OpenFile(filepath.Join(dir, dedupFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		_, err = f.Write(hdr[:])
		require.NoError(t, err)
	}
	_, err = f.Write([]byte("torn!"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep := runOn(t, root, ModeCheck)
	assert.Equal(t, []Kind{KindDedupStale, KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
	rep = runOn(t, root, ModeRepair)
	assert.True(t, findOne(t, rep, KindDedupStale).Repaired, "%+v", rep.Findings)
	st, err := os.Stat(cut.File)
	require.NoError(t, err)
	assert.Equal(t, cut.At, st.Size(), "the unsynced bytes were cut as the server cuts them")
	rep = runOn(t, root, ModeCheck)
	assert.Equal(t, []Kind{KindUnsyncedTail}, kinds(rep), "%+v", rep.Findings)
	assert.Equal(t, ExitClean, rep.ExitCode)
	assertServerHolds(t, root, "orders", map[string]int{"p0": 37, "p1": 12})
}

// Issue 26: fsck decodes Tx entries as the server's replay does instead of
// counting them; one that does not decode is damage (the server refuses to
// start on it), one that does is nothing to report.
func TestTxEntriesAreDecoded(t *testing.T) {
	t.Run("a transaction that decodes", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		datadirtest.SetSummary(t, root, m.Parts["p0"], 38) // everything synced: nothing but the entry to report
		rec := walentry.TxRecord{TxID: uuid.Must(uuid.NewV7()), TS: 1, States: []walentry.TxState{{Group: "g"}}}
		appendWAL(t, root, walEntry{walentry.Tx, rec.Encode()})
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{}, kinds(rep), "%+v", rep.Findings)
	})
	t.Run("a transaction that does not", func(t *testing.T) {
		m, root := datadirtest.Scenario(t)
		datadirtest.SetSummary(t, root, m.Parts["p0"], 38) // everything synced: nothing but the entry to report
		appendWAL(t, root, walEntry{walentry.Tx, []byte{9, 1, 2, 3}})
		rep := runOn(t, root, ModeCheck)
		assert.Equal(t, []Kind{KindCommitLogCorrupt}, kinds(rep), "%+v", rep.Findings)
		assert.Equal(t, ExitDamaged, rep.ExitCode)
		assert.Contains(t, findOne(t, rep, KindCommitLogCorrupt).Detail, "entry 19 (kind 5): transaction redo record: malformed")
	})
}
