package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
