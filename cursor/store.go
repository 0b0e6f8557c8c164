package cursor

import (
	"encoding/binary"
	"sync"

	"github.com/combmq/comb/lease"
)

// Key names one (partition, consumer group) cursor.
type Key struct {
	Partition [16]byte
	Group     string
}

// numShards splits the state so that concurrent acks on different partitions
// rarely meet on one mutex; a power of two so the shard is a mask.
const numShards = 64

// dirtyShrinkLen: a dirty set that grew past this many keys in one window is
// replaced rather than cleared, so a burst does not pin its buckets forever.
const dirtyShrinkLen = 4096

// shard holds a slice of the (partition, group) states. Idle states (a bare
// cursor, the vast majority) live in cold as 8 bytes of value; anything with a
// lease, a remembered span or a retry charge lives in hot.
type shard struct {
	mu     sync.Mutex
	cold   map[Key]uint64
	hot    map[Key]lease.State
	dirty  map[Key]struct{}   // changed since the last checkpoint collected this shard
	leases map[[16]byte][]Key // held lease id → keys (for ByLease)
	groups map[string]string  // intern table: one copy of each group name per shard
	_      [64]byte           // keep neighbouring shards' mutexes off one cache line
}

func (sh *shard) init() {
	sh.cold = make(map[Key]uint64)
	sh.hot = make(map[Key]lease.State)
	sh.dirty = make(map[Key]struct{})
	sh.leases = make(map[[16]byte][]Key)
	sh.groups = make(map[string]string)
}

// shardIndex spreads keys by partition only (all groups of a partition share a
// shard). Partition ids are UUIDv7: the first 8 bytes are mostly time, the last
// 8 random, so a multiply-shift of both halves is enough.
func shardIndex(k Key) int {
	h := (binary.LittleEndian.Uint64(k.Partition[:8]) ^ binary.LittleEndian.Uint64(k.Partition[8:])) * 0x9E3779B97F4A7C15
	return int(h >> (64 - 6))
}

func (e *Engine) shardFor(k Key) *shard { return &e.shards[shardIndex(k)] }

// getLocked returns the state of k; sh.mu is held.
func (sh *shard) getLocked(k Key) (lease.State, bool) {
	if c, ok := sh.cold[k]; ok {
		return lease.State{Committed: c}, true
	}
	s, ok := sh.hot[k]
	return s, ok
}

// internLocked returns k with its group name replaced by the shard's shared
// copy, so a million keys of one group hold one string.
func (sh *shard) internLocked(k Key) Key {
	if g, ok := sh.groups[k.Group]; ok {
		k.Group = g
		return k
	}
	sh.groups[k.Group] = k.Group
	return k
}

// setLocked stores s under k (sh.mu held) and marks k for the next
// checkpoint: every call is a change.
func (sh *shard) setLocked(k Key, s lease.State) {
	sh.dirty[sh.putLocked(k, s)] = struct{}{}
}

// putLocked stores s under k (sh.mu held) without marking it dirty (recovery:
// the state is durable already). It returns k with its group name interned.
func (sh *shard) putLocked(k Key, s lease.State) Key {
	if s.Idle() {
		// The ack path: an idle cursor moves forward and stays idle.
		if _, ok := sh.cold[k]; ok {
			sh.cold[k] = s.Committed
			return k
		}
	}
	old, existed := sh.getLocked(k)
	if !existed {
		k = sh.internLocked(k)
	}
	if old.Lease.ID != s.Lease.ID {
		if old.Lease.Held() {
			sh.unindexLeaseLocked(old.Lease.ID, k)
		}
		if s.Lease.Held() {
			sh.leases[s.Lease.ID] = append(sh.leases[s.Lease.ID], k)
		}
	}
	if s.Idle() {
		if existed && !old.Idle() {
			delete(sh.hot, k)
		}
		sh.cold[k] = s.Committed
	} else {
		if existed && old.Idle() {
			delete(sh.cold, k)
		}
		sh.hot[k] = s
	}
	return k
}

// deleteLocked removes k (sh.mu held) and marks it for the next checkpoint;
// it reports whether k existed.
func (sh *shard) deleteLocked(k Key) bool {
	if !sh.removeLocked(k) {
		return false
	}
	sh.dirty[k] = struct{}{}
	return true
}

// removeLocked removes k without marking it dirty (recovery).
func (sh *shard) removeLocked(k Key) bool {
	old, existed := sh.getLocked(k)
	if !existed {
		return false
	}
	if old.Lease.Held() {
		sh.unindexLeaseLocked(old.Lease.ID, k)
	}
	delete(sh.cold, k)
	delete(sh.hot, k)
	return true
}

func (sh *shard) unindexLeaseLocked(id [16]byte, k Key) {
	keys := sh.leases[id]
	for i, x := range keys {
		if x == k {
			keys[i] = keys[len(keys)-1]
			keys = keys[:len(keys)-1]
			break
		}
	}
	if len(keys) == 0 {
		delete(sh.leases, id)
	} else {
		sh.leases[id] = keys
	}
}

// Get returns the state of k and whether k has a cursor.
func (e *Engine) Get(k Key) (lease.State, bool) {
	sh := e.shardFor(k)
	sh.mu.Lock()
	s, ok := sh.getLocked(k)
	sh.mu.Unlock()
	return s, ok
}

// Set stores s under k in memory at once; it becomes durable with the next
// checkpoint (call Wait to block until then). Not durable on return.
func (e *Engine) Set(k Key, s lease.State) {
	sh := e.shardFor(k)
	sh.mu.Lock()
	sh.setLocked(k, s)
	sh.mu.Unlock()
	e.markChanged()
}

// Put stores s under k in memory without marking it for the next checkpoint:
// a state committed elsewhere (a follower applying another node's
// transaction, issue 15), which this engine must hold but never writes to the
// log itself; the next snapshot reads it from memory.
func (e *Engine) Put(k Key, s lease.State) {
	sh := e.shardFor(k)
	sh.mu.Lock()
	sh.putLocked(k, s)
	sh.mu.Unlock()
}

// Delete removes the cursor and lease of k (group deletion, queue deletion);
// carried by the next checkpoint.
func (e *Engine) Delete(k Key) {
	sh := e.shardFor(k)
	sh.mu.Lock()
	ok := sh.deleteLocked(k)
	sh.mu.Unlock()
	if ok {
		e.markChanged()
	}
}

// Range calls fn for every cursor until fn returns false. Each shard is copied
// under its lock and fn runs unlocked, so fn may call Set or Delete; the view is
// consistent per key, not across keys.
func (e *Engine) Range(fn func(Key, lease.State) bool) {
	type kv struct {
		k Key
		s lease.State
	}
	var buf []kv
	for i := range e.shards {
		sh := &e.shards[i]
		buf = buf[:0]
		sh.mu.Lock()
		for k, c := range sh.cold {
			buf = append(buf, kv{k, lease.State{Committed: c}})
		}
		for k, s := range sh.hot {
			buf = append(buf, kv{k, s})
		}
		sh.mu.Unlock()
		for _, x := range buf {
			if !fn(x.k, x.s) {
				return
			}
		}
	}
}

// Len is the number of cursors held.
func (e *Engine) Len() int {
	n := 0
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		n += len(sh.cold) + len(sh.hot)
		sh.mu.Unlock()
	}
	return n
}

// ByLease returns the keys whose State.Lease.ID == id (live or expired; the
// caller checks Live). Used by lease extend (spec 6), which renews every
// partition of a multi-partition pop.
func (e *Engine) ByLease(id [16]byte) []Key {
	if id == ([16]byte{}) {
		return nil
	}
	var out []Key
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		out = append(out, sh.leases[id]...)
		sh.mu.Unlock()
	}
	return out
}

func stateOf(committed uint64) lease.State { return lease.State{Committed: committed} }
