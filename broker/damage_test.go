package broker

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/cursor"
)

// openSmallFiles opens e.dir with 1 KiB segment files, so every push below
// seals the previous file.
func (e *env) openSmallFiles() {
	e.t.Helper()
	b, err := Open(Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(),
		WakeTick: time.Millisecond, MaxSegmentFileSize: 1024})
	require.NoError(e.t, err)
	e.b = b
}

// damagedSetup writes three sealed-or-active files to partition "bad" and
// one message to partition "good" of queue "q", commits "b1" for group g on
// "bad", closes the broker and returns bad's partition directory.
func damagedSetup(t *testing.T) (*env, string, string) {
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
	e.openSmallFiles()
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	for _, tx := range []string{"b1", "b2", "b3"} {
		_, err := e.b.Push([]PushItem{{Queue: "q", Partition: "bad", TransactionID: tx, Payload: incompressible(1500)}})
		require.NoError(t, err)
		e.clk.Advance(time.Millisecond)
	}
	e.push("q", "good", "g1")
	r := e.pop(PopRequest{Queue: "q", Partition: "bad", Group: "g", Batch: 1})
	require.Equal(t, []string{"b1"}, txids(r))
	require.True(t, e.ack("g", r, "completed")[0].Success)
	badID := e.b.lookupQueue("q").partition("bad").idStr
	require.NoError(t, e.b.Close())
	e.b = nil
	dir := filepath.Join(e.dir, "partitions", badID)
	return e, dir, badID
}

// incompressible is a JSON string of n pseudo-random letters (S2 leaves it as is).
func incompressible(n int) []byte {
	out := make([]byte, 0, n+2)
	out = append(out, '"')
	x := uint32(2463534242)
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out = append(out, 'a'+byte(x%26))
	}
	return append(out, '"')
}

func segFiles(t *testing.T, dir string) []string {
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	sort.Strings(names)
	require.GreaterOrEqual(t, len(names), 3, "the setup needs sealed files")
	return names
}

// issue 4 "one damaged segment takes the whole queue down": a partition whose
// log reports a *segment.CorruptionError, at Open or on a read, is taken out
// of service; the queue's other partitions keep serving, requests that need
// the damaged one fail with ErrDamaged and a short message naming it, and its
// cursors are left alone.
func TestDamagedPartitionIsOutOfServiceAndTheQueueKeepsServing(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, e *env, dir string)
	}{
		{"a flipped byte in a sealed file, found on read", func(t *testing.T, e *env, dir string) {
			f := segFiles(t, dir)[1]
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			data[len(data)/2] ^= 0xff
			require.NoError(t, os.WriteFile(f, data, 0o644))
		}},
		{"a missing sealed file, found by Open", func(t *testing.T, e *env, dir string) {
			f := segFiles(t, dir)[1]
			require.NoError(t, os.Remove(f))
			_ = os.Remove(strings.TrimSuffix(f, ".seg") + ".idx")
			// Without the clean-shutdown marker Open reads every partition's files.
			_ = os.Remove(filepath.Join(e.dir, "meta", cleanFileName))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, dir, badID := damagedSetup(t)
			c.damage(t, e, dir)
			e.openSmallFiles()
			b := e.b
			k := cursor.Key{Partition: b.lookupQueue("q").partition("bad").id, Group: "g"}
			before, ok := b.cur.Get(k)
			require.True(t, ok)
			require.Equal(t, uint64(1), before.Committed)

			// Wildcard pops skip the damaged partition and serve the good one.
			r := e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10, AutoAck: true})
			assert.Equal(t, []string{"g1"}, txids(r))
			r = e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10})
			assert.Empty(t, r.Messages)
			assert.Equal(t, 1, b.View().Counters().DamagedPartitions)
			dmg := b.Damaged()
			require.Len(t, dmg, 1)
			assert.Equal(t, "q", dmg[0].Queue)
			assert.Equal(t, "bad", dmg[0].Partition)
			assert.Equal(t, badID, dmg[0].PartitionID)
			assert.True(t, strings.HasSuffix(dmg[0].File, ".seg"), dmg[0].File)
			assert.NotContains(t, dmg[0].File, "/", "a base name, not a path")

			// Everything that needs the damaged partition fails with ErrDamaged.
			requireDamaged := func(err error) {
				t.Helper()
				require.ErrorIs(t, err, ErrDamaged)
				assert.Equal(t, `partition "bad" of queue "q" is damaged on disk and out of service; run `+"`comb fsck`"+` on the data directory`, err.Error())
				assert.NotContains(t, err.Error(), e.dir)
			}
			_, err := b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "bad", Group: "g2", Batch: 10})
			requireDamaged(err)
			_, err = b.Push([]PushItem{{Queue: "q", Partition: "bad", TransactionID: "new", Payload: []byte("1")}})
			requireDamaged(err)
			_, err = b.Ack("g", []AckItem{{TransactionID: "b2", PartitionID: badID}})
			requireDamaged(err)
			_, err = b.Transaction([]TxOp{{Type: "ack", Group: "g", Ack: AckItem{TransactionID: "b2", PartitionID: badID}}})
			requireDamaged(err)
			_, err = b.SeekPartition("g", "q", "bad")
			requireDamaged(err)

			// The good partition still takes pushes; the damaged one's cursor is untouched.
			e.push("q", "good", "g2")
			assert.Equal(t, []string{"g2"}, txids(e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10})))
			_, err = b.Seek("g", "q", true, 0)
			require.NoError(t, err)
			after, _ := b.cur.Get(k)
			assert.Equal(t, before, after, "no cursor moves on an unreadable log")

			// A restart finds it again (no clean-shutdown summary hides it).
			e.reopen()
			e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10})
			_, err = e.b.Pop(context.Background(), PopRequest{Queue: "q", Partition: "bad", Group: "g", Batch: 10})
			require.ErrorIs(t, err, ErrDamaged)
			after, _ = e.b.cur.Get(k)
			assert.Equal(t, before, after, "recovery leaves its cursors alone")
		})
	}
}
