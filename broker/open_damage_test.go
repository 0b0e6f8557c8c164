package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/segment"
)

// syncedFiles is a partition written one segment per push, closed cleanly
// (meta/clean records all of it as synced), with the active file's size after
// each push (ends[i]: where segment i ends) and group g's cursor after the
// first two acked.
type syncedFiles struct {
	e    *env
	dir  string // the partition's directory
	seg  string // its active segment file
	ends []int64
	old  string // a copy of the directory after the first two pushes
}

func newSyncedFiles(t *testing.T) *syncedFiles {
	e := newScaleEnv(t, nil)
	sf := &syncedFiles{e: e}
	for i, tx := range []string{"a", "b", "c", "d", "e"} {
		e.push("q", "p", tx)
		if i == 0 {
			sf.dir = e.part("q", "p").log.Dir()
			sf.seg = filepath.Join(sf.dir, "00000000000000000001.seg")
		}
		st, err := os.Stat(sf.seg)
		require.NoError(t, err)
		sf.ends = append(sf.ends, st.Size())
		if i == 1 {
			sf.old = filepath.Join(t.TempDir(), "old")
			require.NoError(t, os.CopyFS(sf.old, os.DirFS(sf.dir)))
		}
	}
	r := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 2})
	require.Equal(t, []string{"a", "b"}, txids(r))
	require.True(t, e.ack("g", r, "completed")[0].Success)
	require.NoError(t, e.b.Close())
	e.b = nil
	return sf
}

// TestCleanStopCutBelowSyncedIsDamage (issue 21 item 4): after a clean stop
// meta/clean records every offset of the partition as synced, so a file that
// is shorter than that, or a full-length segment below it that fails its
// checksum, cannot be a torn write: the partition is taken out of service,
// naming the file and the byte range, its files are kept byte for byte (no
// cut, no copy needed) and its cursors are left alone. Before, start-up cut
// such a file as a torn tail and served the partition as healthy, losing
// acknowledged messages.
func TestCleanStopCutBelowSyncedIsDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, sf *syncedFiles)
		// the damaged range reported: [start, end) and the offsets
		start, end  func(sf *syncedFiles) int64
		first, last uint64
	}{
		{"active segment cut by 1 byte", func(t *testing.T, sf *syncedFiles) {
			require.NoError(t, os.Truncate(sf.seg, sf.ends[4]-1))
		}, func(sf *syncedFiles) int64 { return sf.ends[3] }, func(sf *syncedFiles) int64 { return sf.ends[4] - 1 }, 5, 5},
		{"active segment cut inside its third segment", func(t *testing.T, sf *syncedFiles) {
			require.NoError(t, os.Truncate(sf.seg, sf.ends[1]+10))
		}, func(sf *syncedFiles) int64 { return sf.ends[1] }, func(sf *syncedFiles) int64 { return sf.ends[1] + 10 }, 3, 5},
		{"a flipped byte in the last full-length segment", func(t *testing.T, sf *syncedFiles) {
			flipByte(t, sf.seg, sf.ends[4]-3)
		}, func(sf *syncedFiles) int64 { return sf.ends[3] }, func(sf *syncedFiles) int64 { return sf.ends[4] }, 5, 5},
		{"partition directory replaced by an older copy", func(t *testing.T, sf *syncedFiles) {
			require.NoError(t, os.RemoveAll(sf.dir))
			require.NoError(t, os.CopyFS(sf.dir, os.DirFS(sf.old)))
		}, func(sf *syncedFiles) int64 { return sf.ends[1] }, func(sf *syncedFiles) int64 { return sf.ends[1] }, 3, 5},
		{"newest segment file overwritten in place by an older copy", func(t *testing.T, sf *syncedFiles) {
			data, err := os.ReadFile(filepath.Join(sf.old, filepath.Base(sf.seg)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(sf.seg, data, 0o644))
		}, func(sf *syncedFiles) int64 { return sf.ends[1] }, func(sf *syncedFiles) int64 { return sf.ends[1] }, 3, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sf := newSyncedFiles(t)
			tc.damage(t, sf)
			damaged, err := os.ReadFile(sf.seg)
			require.NoError(t, err)

			sf.e.reopenWith(nil)
			b := sf.e.b
			dmg := b.Damaged()
			require.Len(t, dmg, 1, "the partition is out of service")
			assert.Equal(t, filepath.Base(sf.seg), dmg[0].File)
			assert.Equal(t, tc.start(sf), dmg[0].StartByte, "damaged range starts")
			assert.Equal(t, tc.end(sf), dmg[0].EndByte, "damaged range ends")
			assert.Equal(t, tc.first, dmg[0].FirstOffset)
			assert.Equal(t, tc.last, dmg[0].LastOffset)
			assert.False(t, b.Healthy() && len(b.Damaged()) == 0)

			_, err = b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 10})
			require.ErrorIs(t, err, ErrDamaged)
			st, ok := b.cur.Get(cursor.Key{Partition: sf.e.part("q", "p").id, Group: "g"})
			require.True(t, ok)
			assert.Equal(t, uint64(2), st.Committed, "the cursor is left alone")
			require.NoError(t, b.Close())
			sf.e.b = nil

			kept, err := os.ReadFile(sf.seg)
			require.NoError(t, err)
			assert.Equal(t, damaged, kept, "the damaged file is kept byte for byte")
			names, err := os.ReadDir(sf.dir)
			require.NoError(t, err)
			for _, n := range names {
				assert.NotContains(t, n.Name(), ".from-", "nothing cut as a torn tail")
			}

			// A restart finds it again: the stop wrote no summary that hides it.
			sf.e.reopenWith(nil)
			assert.Len(t, sf.e.b.Damaged(), 1)
		})
	}
}

// TestCleanStopBytesPastSyncedAreCut: what lies past the synced length after
// a clean stop (bytes no summary covers: never acknowledged) is still cut,
// after a copy to quarantine (no commit-log entry holds them), and the
// partition serves everything that was synced.
func TestCleanStopBytesPastSyncedAreCut(t *testing.T) {
	sf := newSyncedFiles(t)
	f, err := os.OpenFile(sf.seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("CMBS torn"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	sf.e.reopenWith(nil)
	assert.Empty(t, sf.e.b.Damaged())
	st, err := os.Stat(sf.seg)
	require.NoError(t, err)
	assert.Equal(t, sf.ends[4], st.Size(), "cut back to the synced length")
	kept := filepath.Join(sf.e.dir, "quarantine", "partitions", filepath.Base(sf.dir), fmt.Sprintf("%s.from-%d", filepath.Base(sf.seg), sf.ends[4]))
	assert.Equal(t, []byte("CMBS torn"), mustRead(t, kept), "no commit-log entry holds the cut bytes: they are kept")
	assert.Equal(t, []string{"c", "d", "e"}, txids(sf.e.pop(PopRequest{Queue: "q", Group: "g", Batch: 10})))
}

// TestCrashTornTailPastSyncedIsRepaired: after a kill -9 (no clean marker;
// meta/summaries from the last flush pass) bytes past the synced length are
// a torn tail the commit log covers: cut and replayed, never damage.
func TestCrashTornTailPastSyncedIsRepaired(t *testing.T) {
	always := func(c *Config) { c.Sync = "always" }
	e := newScaleEnv(t, always)
	e.push("q", "p", "a", "b")
	require.NoError(t, e.b.flushPass())
	e.push("q", "p", "c")
	seg := filepath.Join(e.part("q", "p").log.Dir(), "00000000000000000001.seg")
	st, err := os.Stat(seg)
	require.NoError(t, err)
	e.crash()
	// A power cut tore the last append: half of it reached the disk.
	require.NoError(t, os.Truncate(seg, st.Size()-5))

	e.reopenWith(always)
	assert.Empty(t, e.b.Damaged())
	assert.Equal(t, []string{"a", "b", "c"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", Batch: 10})))
}

// TestCleanStopRecordsDLQSyncedLength: a clean stop records the DLQ logs'
// synced lengths too, so a DLQ file cut after it is damage: the start is
// refused, naming the file, and the file is kept.
func TestCleanStopRecordsDLQSyncedLength(t *testing.T) {
	e := newScaleEnv(t, nil)
	opts := DefaultQueueOptions()
	opts.RetryLimit = 0
	_, err := e.b.Configure(ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p", "a")
	r := e.pop(PopRequest{Queue: "q", Group: "g"})
	out := e.ack("g", r, "failed")
	require.True(t, out[0].DLQ)
	q := e.b.lookupQueue("q")
	qid, id := q.idStr, q.id
	require.NoError(t, e.b.Close())
	e.b = nil

	sums, err := segment.DecodeSummaries(mustRead(t, filepath.Join(e.dir, "meta", cleanFileName)))
	require.NoError(t, err)
	require.Contains(t, sums, id, "the clean marker holds the DLQ log")
	assert.Equal(t, uint64(2), sums[id].NextOffset)

	seg := filepath.Join(e.dir, "dlq", qid, "00000000000000000001.seg")
	st, err := os.Stat(seg)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg, st.Size()-1))
	c := Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(), MaintenanceInterval: -1}
	_, err = Open(c)
	var ce *segment.CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, seg, ce.File)
	assert.Equal(t, int64(0), ce.StartByte)
	assert.Equal(t, st.Size()-1, ce.EndByte)
	st2, err := os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, st.Size()-1, st2.Size(), "the file is kept as it is")
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[at] ^= 0x5a
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
