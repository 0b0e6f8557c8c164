package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// Issue 21: a flush pass notes every log's next offset, then syncs the logs
// marked so far. A push publishes its offsets before it marks its log, so a
// pass can note offsets that no sync of it covers; the summaries recorded
// them as synced, a power cut left the file shorter, and the next start
// found offsets missing below the synced length and took the partition out
// of service. Here the window is held open: a segment appended to the
// partition log without a mark (as a push is between its append and its
// mark) when a pass runs.
func TestFlushPassRecordsOnlyWhatItsSyncsCovered(t *testing.T) {
	mem := vfs.NewStrictMem("/data")
	b, err := Open(syncFSFlushConfig(mem, false))
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Push([]PushItem{{Queue: "q", TransactionID: "a", Payload: []byte(`"a"`)}})
	require.NoError(t, err)
	require.NoError(t, b.flushPass())
	ps := b.queues["q"].partitionsSnapshot()
	require.Len(t, ps, 1)
	p := ps[0]
	require.Equal(t, uint64(2), p.log.DurableNext())

	// Published, not marked: no pass syncs it.
	_, err = p.log.Append(b.now().UnixMicro(), []segment.Record{{ID: newV7(), TransactionID: "b", Payload: []byte(`"b"`)}})
	require.NoError(t, err)
	require.Equal(t, uint64(3), p.log.NextOffset())
	assert.Equal(t, uint64(2), p.log.DurableNext(), "offset 2 is not synced")
	require.NoError(t, b.flushPass())
	assert.Equal(t, uint64(2), p.sum.NextOffset, "the summary claims only the synced offsets")

	crashed := mem.Crash(false)
	b2, err := Open(syncFSFlushConfig(crashed, false))
	require.NoError(t, err)
	defer b2.Close()
	assert.Empty(t, b2.Damaged(), "no partition out of service")
	assert.Equal(t, 0, b2.View().Counters().DamagedPartitions)
	ps2 := b2.queues["q"].partitionsSnapshot()
	require.Len(t, ps2, 1)
	assert.Equal(t, uint64(2), ps2[0].log.NextOffset(), "the unsynced, unacknowledged segment is cut")

	// A sync covers what was appended before it.
	require.NoError(t, p.log.Sync())
	assert.Equal(t, uint64(3), p.log.DurableNext())
}
