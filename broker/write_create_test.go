package broker

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/meta"
)

// Requests that create partitions while a creation holds metaMu join one
// batch: one metadata entry (one group commit) for all of them, where each
// used to append and wait for its own, one after the other.
func TestConcurrentCreationsShareOneMetadataEntry(t *testing.T) {
	b, err := Open(Config{DataDir: t.TempDir(), Sync: "always", Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "first", TransactionID: "x", Payload: []byte("1")}})
	require.NoError(t, err)
	from := b.wal.DurableLSN() + 1

	const n = 20
	b.metaMu.Lock() // a creation in progress: the n requests queue behind it
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.ensurePartitions([]partKey{{"q", fmt.Sprintf("p%d", i)}, {"q", "shared"}})
		}()
	}
	require.Eventually(t, func() bool {
		b.createMu.Lock()
		defer b.createMu.Unlock()
		return b.creating != nil && len(b.creating.keys) == 2*n
	}, 10*time.Second, time.Millisecond, "every request joined the batch")
	b.metaMu.Unlock()
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	metaEntries, creates := 0, 0
	require.NoError(t, b.wal.Read(from, func(_ uint64, kind byte, payload []byte) error {
		if kind != walMeta {
			return nil
		}
		metaEntries++
		recs, err := decodeMetaEntry(payload)
		require.NoError(t, err)
		for _, r := range recs {
			if r.Kind == meta.KindPartitionCreate {
				creates++
			}
		}
		return nil
	}))
	assert.Equal(t, 1, metaEntries)
	assert.Equal(t, n+1, creates, "p0..p19 and shared, once")
	q := b.queues["q"]
	for i := range n {
		assert.NotNil(t, q.partition(fmt.Sprintf("p%d", i)))
	}
}
