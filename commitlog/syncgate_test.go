package commitlog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// Issue 23: AwaitSync sees a batch's write and fdatasync in flight (here held
// in Options.OnSync, which runs after the fdatasync and before the tickets
// complete): it reports false at once for max 0, false after max when the
// batch stays in flight, and true once the batch is done, not before; with
// nothing in flight it returns true at once.
func TestAwaitSyncWaitsForTheBatchInFlight(t *testing.T) {
	inSync, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	l, _ := open(t, vfs.NewMem(), Options{Sync: SyncAlways, OnSync: func(int64) {
		if held.CompareAndSwap(false, true) {
			close(inSync)
			<-release
		}
	}})
	defer l.Close()
	assert.True(t, l.AwaitSync(0), "nothing in flight before the first append")

	tk, err := l.Append(1, payload(1))
	require.NoError(t, err)
	<-inSync
	assert.False(t, l.AwaitSync(0), "the batch is in flight")
	start := time.Now()
	assert.False(t, l.AwaitSync(20*time.Millisecond), "still in flight at the bound")
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "waited up to the bound")

	var released atomic.Bool
	awaited := make(chan bool)
	go func() {
		ok := l.AwaitSync(time.Hour)
		awaited <- ok && released.Load()
	}()
	released.Store(true)
	close(release)
	assert.True(t, <-awaited, "returned true, and only once the batch was let go")
	require.NoError(t, tk.Wait())
	assert.True(t, l.AwaitSync(0), "nothing in flight after the batch")
	appendWait(t, l, 2)
	assert.True(t, l.AwaitSync(0), "nothing in flight after the next batch")
}
