package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanMarkerDistrustsReplacedFiles: a clean-shutdown summary describes
// the files as Close left them; when the partition's files are replaced
// afterwards (an older copy restored under a newer cursor journal), Open must
// verify the log instead, so the cursor is clamped to the restored high-water
// mark and new pushes are delivered (issue 7 follow-up, crash test
// TestCrashDamageCursorAhead).
func TestCleanMarkerDistrustsReplacedFiles(t *testing.T) {
	cases := []struct {
		name    string
		restore func(t *testing.T, dir, old string)
	}{
		{"partition directory replaced by an older copy", func(t *testing.T, dir, old string) {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.CopyFS(dir, os.DirFS(old)))
		}},
		{"newest segment file overwritten in place by an older copy", func(t *testing.T, dir, old string) {
			seg := "00000000000000000001.seg"
			data, err := os.ReadFile(filepath.Join(old, seg))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, seg), data, 0o644))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newScaleEnv(t, nil)
			e.push("q", "p", "a", "b")
			dir := e.part("q", "p").log.Dir()
			e.reopenWith(nil)
			old := filepath.Join(t.TempDir(), "old")
			require.NoError(t, os.CopyFS(old, os.DirFS(dir)))

			e.push("q", "p", "c", "d", "e")
			res := e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})
			require.Equal(t, []string{"a", "b", "c", "d", "e"}, txids(res))
			require.NoError(t, e.b.Close())
			e.b = nil
			tc.restore(t, dir, old)

			e.reopenWith(nil)
			p := e.part("q", "p")
			assert.Equal(t, uint64(3), p.visible.Load(), "high-water mark of the restored files")
			st, ok := e.b.cur.Get(cursorKey(e, "q", "p", "g"))
			require.True(t, ok)
			assert.Equal(t, uint64(2), st.Committed, "cursor clamped to the restored high-water mark")
			e.push("q", "p", "f1", "f2")
			res = e.pop(PopRequest{Queue: "q", Group: "g", AutoAck: true})
			assert.Equal(t, []string{"f1", "f2"}, txids(res))
		})
	}
}

// TestCleanMarkerTrustsUntouchedFiles: partitions left as Close wrote them
// open from their summaries (no file opened), while a changed one beside
// them is verified.
func TestCleanMarkerTrustsUntouchedFiles(t *testing.T) {
	e := newScaleEnv(t, nil)
	for i := range 4 {
		e.push("q", fmt.Sprint(i), fmt.Sprintf("m%d", i))
	}
	e.push("q", "empty-later", "x")
	touched := e.part("q", "2").log.Dir()
	require.NoError(t, e.b.Close())
	e.b = nil
	f, err := os.OpenFile(filepath.Join(touched, "00000000000000000001.seg"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("CMBS torn"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	e.reopenWith(nil)
	for i := range 4 {
		p := e.part("q", fmt.Sprint(i))
		assert.Equal(t, i == 2, p.log.Loaded(), "partition %d opened at start-up only if its files changed", i)
		assert.Equal(t, uint64(2), p.visible.Load(), "partition %d", i)
	}
}

// TestCrashRestartTrustsCheckpointedSummaries: after a crash (no clean
// marker) Open opens only the partitions whose files changed since the last
// summary checkpoint; the others answer from their checkpointed summaries.
func TestCrashRestartTrustsCheckpointedSummaries(t *testing.T) {
	always := func(c *Config) { c.Sync = "always" } // a checkpoint records synced logs only
	e := newScaleEnv(t, always)
	for i := range 4 {
		e.push("q", fmt.Sprint(i), fmt.Sprintf("m%d", i))
	}
	require.NoError(t, e.b.flushPass())
	e.push("q", "1", "late") // after the checkpoint: must be verified
	torn := e.part("q", "3").log.Dir()
	e.crash()
	f, err := os.OpenFile(filepath.Join(torn, "00000000000000000001.seg"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("CMBS torn"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	e.reopenWith(always)
	cases := []struct {
		name      string
		partition string
		verified  bool
		visible   uint64
	}{
		{"untouched since the checkpoint: not opened", "0", false, 2},
		{"appended after the checkpoint: verified", "1", true, 3},
		{"untouched and intact: not opened", "2", false, 2},
		{"torn tail after the checkpoint: verified and cut", "3", true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := e.part("q", tc.partition)
			assert.Equal(t, tc.verified, p.log.Loaded())
			assert.Equal(t, tc.visible, p.visible.Load())
		})
	}
	res := e.pop(PopRequest{Queue: "q", Batch: 10, Partitions: 4, AutoAck: true})
	assert.ElementsMatch(t, []string{"m0", "m1", "late", "m2", "m3"}, txids(res))
}
