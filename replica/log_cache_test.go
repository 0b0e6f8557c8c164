package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openWAL is a raft-wal in a fresh directory, closed with the test.
func openWAL(t *testing.T) *wal.WAL {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(t.TempDir(), wal.WithMetaStore(meta))
	require.NoError(t, err)
	t.Cleanup(func() { w.Close(); meta.Close() })
	return w
}

func cmd(index, term uint64, data []byte) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data}
}

// Issue 23: the entries raft just stored are read back from memory, the very bytes raft
// holds, not copied out of a 64 KiB pread of raft-wal's segment file.
func TestLogCacheServesTheNewestEntriesFromMemory(t *testing.T) {
	c := newLogCache(openWAL(t))
	small, big := bytes.Repeat([]byte{'s'}, 10<<10), bytes.Repeat([]byte{'b'}, logCacheMaxEntry+1)
	require.NoError(t, c.StoreLogs([]*raft.Log{cmd(1, 1, small), cmd(2, 1, big)}))

	var got raft.Log
	require.NoError(t, c.GetLog(1, &got))
	assert.Equal(t, uint64(1), got.Index)
	assert.Same(t, &small[0], &got.Data[0], "a cached entry is the stored one")

	require.NoError(t, c.GetLog(2, &got))
	assert.Equal(t, big, got.Data, "an entry over the cap is read from raft-wal")
	assert.NotSame(t, &big[0], &got.Data[0], "and not kept in memory")

	// Index 1 + logCacheEntries shares index 1's slot: the older entry is raft-wal's again.
	var next []*raft.Log
	for i := uint64(3); i <= 1+logCacheEntries; i++ {
		next = append(next, cmd(i, 1, binary.BigEndian.AppendUint64(nil, i)))
	}
	require.NoError(t, c.StoreLogs(next))
	require.NoError(t, c.GetLog(1, &got))
	assert.Equal(t, small, got.Data)
	assert.NotSame(t, &small[0], &got.Data[0], "evicted by the entry of the same slot")
	require.NoError(t, c.GetLog(1+logCacheEntries, &got))
	assert.Equal(t, binary.BigEndian.AppendUint64(nil, 1+logCacheEntries), got.Data)

	var missing raft.Log
	assert.ErrorIs(t, c.GetLog(5000, &missing), raft.ErrLogNotFound, "a miss is raft-wal's answer")
	assert.True(t, c.IsMonotonic(), "raft-wal's indexes admit no gap, and raft must still know it")
}

// A follower's conflicting suffix is deleted and written again with another term: the
// cache never serves the deleted entry.
func TestLogCacheForgetsDeletedEntries(t *testing.T) {
	c := newLogCache(openWAL(t))
	require.NoError(t, c.StoreLogs([]*raft.Log{cmd(1, 1, []byte("a")), cmd(2, 1, []byte("old"))}))
	require.NoError(t, c.DeleteRange(2, 2))
	var got raft.Log
	assert.ErrorIs(t, c.GetLog(2, &got), raft.ErrLogNotFound)
	require.NoError(t, c.StoreLogs([]*raft.Log{cmd(2, 2, []byte("new"))}))
	require.NoError(t, c.GetLog(2, &got))
	assert.Equal(t, uint64(2), got.Term)
	assert.Equal(t, []byte("new"), got.Data)
}

// failingStore refuses every write.
type failingStore struct {
	monotonicLogStore
	err error
}

func (f failingStore) StoreLogs([]*raft.Log) error { return f.err }

// An entry raft-wal did not make durable is not cached: raft must not send or apply it.
func TestLogCacheCachesNothingAFailedWriteHeld(t *testing.T) {
	boom := errors.New("disk gone")
	c := newLogCache(failingStore{monotonicLogStore: openWAL(t), err: boom})
	assert.ErrorIs(t, c.StoreLogs([]*raft.Log{cmd(1, 1, []byte("x"))}), boom, "raft sees the store's own error")
	var got raft.Log
	assert.ErrorIs(t, c.GetLog(1, &got), raft.ErrLogNotFound)
}
