package broker

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// Issue 23: under --sync always the flush pass yields to the local commit
// log before each of its syncs (flushYield, the Committer's hook); under
// interval and never no acknowledgement waits on a commit-log sync, and the
// pass has nothing to yield to. A pass over a pushed partition with the hook
// set completes, and the partition is durable.
func TestFlushYieldsToTheCommitLogUnderSyncAlways(t *testing.T) {
	for _, tc := range []struct {
		sync  string
		yield bool
	}{{"always", true}, {"interval", false}, {"never", false}} {
		t.Run(tc.sync, func(t *testing.T) {
			b, err := Open(Config{DataDir: "/data", FS: vfs.NewMem(), Sync: tc.sync, Logger: zerolog.Nop(), FlushInterval: time.Hour})
			require.NoError(t, err)
			defer b.Close()
			assert.Equal(t, tc.yield, b.flushYield() != nil)
			_, err = b.Push([]PushItem{{Queue: "q", Partition: "p", Payload: []byte(`{"a":1}`)}})
			require.NoError(t, err)
			require.NoError(t, b.flushPass())
			p := b.partitionList(nil)[0]
			assert.Equal(t, p.log.NextOffset(), p.log.DurableNext())
			assert.False(t, p.log.Dirty())
		})
	}
}
