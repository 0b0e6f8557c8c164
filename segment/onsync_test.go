package segment

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// issue 10: with OnSync every timed sync goes to the observer (the broker's
// histogram counts them all), none to the bounded SyncLatencies buffer.
func TestOnSyncSeesEverySync(t *testing.T) {
	l, _, err := openLog(vfs.NewMem(), "/p", Options{})
	require.NoError(t, err)
	c := NewCommitter(SyncAlways, 0)
	var n atomic.Int64
	c.OnSync(func(int64) { n.Add(1) })
	for i := range 5000 {
		_, err = l.Append(1, recs(i, 1, 10))
		require.NoError(t, err)
		require.NoError(t, c.Commit(l))
	}
	require.NoError(t, c.Close())
	assert.Equal(t, int64(5000), n.Load(), "one sync per Commit, past the 4,096 the buffer keeps")
	assert.Empty(t, c.SyncLatencies())
	require.NoError(t, l.Close())
}
