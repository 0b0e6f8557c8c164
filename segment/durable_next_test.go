package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// Issue 21: DurableNext says up to which offset a sync covered the log,
// across rotations (deferred ones too), a Flush that did not have the log
// marked, and a release with unsynced appends; a reopen counts what it
// opened as durable.
func TestDurableNextFollowsSyncsNotAppends(t *testing.T) {
	mem := vfs.NewStrictMem("/d")
	c := NewCommitter()
	l, _, err := openLog(mem, "/d/p", Options{DeferRotationSync: true, MaxFileBytes: 400})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), l.DurableNext(), "empty")
	for b := 0; b < 5; b++ { // 10 offsets over several files
		_, err := l.Append(int64(b), recs(10*b, 2, 60))
		require.NoError(t, err)
	}
	require.Equal(t, uint64(11), l.NextOffset())
	assert.Equal(t, uint64(1), l.DurableNext(), "nothing synced")
	require.NoError(t, c.Flush()) // not marked: syncs nothing
	assert.Equal(t, uint64(1), l.DurableNext())
	c.Mark(l)
	require.NoError(t, c.Flush())
	assert.Equal(t, uint64(11), l.DurableNext())

	_, err = l.Append(5, recs(50, 3, 60))
	require.NoError(t, err)
	assert.Equal(t, uint64(11), l.DurableNext(), "the append after the sync is not covered")
	require.True(t, l.Release())
	assert.Equal(t, uint64(11), l.DurableNext(), "a release syncs nothing of the active file")
	require.NoError(t, l.Sync()) // through a descriptor of its own
	assert.Equal(t, uint64(14), l.DurableNext())
	require.NoError(t, l.Close())

	l2, _, err := openLog(mem, "/d/p", Options{DeferRotationSync: true, MaxFileBytes: 400})
	require.NoError(t, err)
	defer l2.Close()
	assert.Equal(t, uint64(14), l2.DurableNext(), "what a reopen finds counts as durable")
}
