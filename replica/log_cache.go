package replica

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the newest raft log entries in memory in front of raft-wal (issue 23: leader
// CPU per push request). Raft reads back from its LogStore every entry it sends: the leader
// once per follower per AppendEntries (and the entry before them, for its term), a follower
// every entry it applies. raft-wal answers each GetLog with a pread of at least 64 KiB into
// a pooled buffer and a copy of the entry out of it, so on a 3-node cluster a ~10 KB push
// entry cost the leader two 64 KiB reads and copies of what it had in memory a moment before.
// Here the entries of the last StoreLogs calls are served from memory.
//
// Why not raft's own LogCache: it bounds the number of entries only, and a push body may be
// up to --max-body (64 MiB by default), so its ring could pin gigabytes. This one skips
// entries over logCacheMaxEntry (a miss reads raft-wal, as before), which bounds it to
// logCacheEntries × logCacheMaxEntry (32 MiB), and it keeps raft-wal's IsMonotonic, which
// raft asks of its LogStore after a snapshot install.
//
// The cached *raft.Log is the one raft stored (the leader's inflight entry, a follower's
// decoded RPC): GetLog copies the struct, so Data is shared with raft, which never writes to
// it, and with the FSM (fsm.Apply), which must not either.
type logCache struct {
	raft.LogStore // raft-wal

	mu   sync.RWMutex
	ring []*raft.Log // entry i at i % len(ring); nil = none
}

const (
	// logCacheEntries covers several AppendEntries batches (raft's MaxAppendEntries is 64):
	// the leader replicates what it dispatched last, followers apply what they stored last.
	logCacheEntries = 256
	// logCacheMaxEntry is the largest entry kept (a push of 100 messages of 2 KB is ~200 KB
	// before compression).
	logCacheMaxEntry = 128 << 10
)

// monotonicLogStore is what raft-wal is besides a LogStore (raft.MonotonicLogStore).
type monotonicLogStore interface {
	raft.LogStore
	raft.MonotonicLogStore
}

func newLogCache(store monotonicLogStore) *logCache {
	return &logCache{LogStore: store, ring: make([]*raft.Log, logCacheEntries)}
}

// IsMonotonic is raft-wal's: its indexes admit no gap (raft then deletes the whole log after a
// snapshot install instead of leaving a gap before the snapshot's index).
func (c *logCache) IsMonotonic() bool { return c.LogStore.(raft.MonotonicLogStore).IsMonotonic() }

// GetLog answers from memory when the entry is cached, else from raft-wal.
func (c *logCache) GetLog(index uint64, log *raft.Log) error {
	c.mu.RLock()
	cached := c.ring[index%uint64(len(c.ring))]
	c.mu.RUnlock()
	if cached != nil && cached.Index == index {
		*log = *cached
		return nil
	}
	return c.LogStore.GetLog(index, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

// StoreLogs writes the entries to raft-wal (durable when it returns) and only then caches
// them: a failed write caches nothing.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	for _, l := range logs {
		slot := &c.ring[l.Index%uint64(len(c.ring))]
		if len(l.Data) <= logCacheMaxEntry {
			*slot = l
		} else {
			*slot = nil // not kept, and the slot's older entry pins no memory
		}
	}
	c.mu.Unlock()
	return nil
}

// DeleteRange forgets every cached entry (a follower's conflicting suffix, raft's compaction
// after a snapshot) before raft-wal deletes the range, so no removed entry is served.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	clear(c.ring)
	c.mu.Unlock()
	return c.LogStore.DeleteRange(min, max)
}
