package replica

import (
	"sync"

	"github.com/hashicorp/raft"
)

// stableStore is raft's StableStore (its current term and vote) over raft-wal's, and drops
// writes once the Log closes. Raft answers a heartbeat on the transport's goroutine, which its
// Shutdown does not wait for; a heartbeat of a new term that arrives while a node closes (the
// next leader's first, after a graceful stop handed the leadership over) then saves the term
// to a closed store, and raft panics: "failed to save current term: closed"
// (hashicorp/raft issue 717, v1.8.0). Found by httpapi's cluster tests under the race
// detector.
//
// Dropping that write is safe: raft no longer acts after Shutdown, a heartbeat carries no
// entries and no vote, and a node that starts again with the older term is a node that did
// not receive that heartbeat (a lost message), which learns the term from the next one.
type stableStore struct {
	raft.StableStore

	// mu: a write in progress finishes before close returns, so the store under it is
	// closed only after the last write that reached it.
	mu     sync.RWMutex
	closed bool
}

func (s *stableStore) Set(key, val []byte) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.StableStore.Set(key, val)
}

func (s *stableStore) SetUint64(key []byte, val uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	return s.StableStore.SetUint64(key, val)
}

// close makes every later write a no-op, once the writes in progress finished. Call it after
// raft's Shutdown and before closing the store under it.
func (s *stableStore) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
