package segment

import (
	"sync"
	"sync/atomic"
)

// HandleCache bounds the file handles held by every Log that shares it (issue
// 7: 100,000 partitions must not need 200,000 descriptors). A Log counts its
// active segment file and its index (2 handles), its cached sealed file and
// index (2), its dedup file (1) and each dedup run file a lookup has read
// (one per run: up to 3 a size tier of log4(ids / 6,144), segment/dedup) while they are open.
//
// When the total passes the limit, the cache releases the least recently used
// Logs (CLOCK approximation: one "referenced" bit per Log, set by every use,
// cleared as the hand sweeps past) until it is back under. A released Log
// keeps its file list, offsets and timestamps in memory (a few hundred bytes)
// and its dedup index (table, run filters: a budget of bytes of its own,
// SetDedupBudget, dedup_budget.go), and reopens its active file on the next
// use that needs a handle; see Log.Release. A Log in use (pinned) is never released, so the limit can be
// passed by at most the handles of the Logs in use at that moment.
//
// Safe for concurrent use. The zero value is not usable; see NewHandleCache.
type HandleCache struct {
	max int

	mu   sync.Mutex
	ring clockRing // Logs holding at least one counted handle
	used int       // handles counted, sum of Log.handles over ring

	releases atomic.Uint64

	// The dedup memory budget (dedup_budget.go): Logs whose dedup index is
	// in memory, in CLOCK order, and the bytes they hold.
	dmax       int64
	dused      int64
	dring      clockRing
	devictions atomic.Uint64
}

// DefaultMaxHandles is the handle budget comb serve uses unless told
// otherwise (--max-open-files): well under the usual 1,024 soft limit, with
// room left for sockets and the journals.
const DefaultMaxHandles = 512

// NewHandleCache returns a cache that keeps at most maxHandles handles open
// (values < 4 are raised to 4: one Log in use needs up to 5).
func NewHandleCache(maxHandles int) *HandleCache {
	return &HandleCache{max: max(maxHandles, 4), dmax: DefaultDedupBudget,
		ring:  clockRing{slot: func(l *Log) *int { return &l.slot }},
		dring: clockRing{slot: func(l *Log) *int { return &l.dslot }}}
}

// HandleStats is a snapshot of a HandleCache.
type HandleStats struct {
	Open     int    // handles counted now
	Max      int    // the configured limit
	Logs     int    // Logs holding at least one handle
	Releases uint64 // Logs released to make room, since NewHandleCache
}

// Stats returns the cache's counters.
func (c *HandleCache) Stats() HandleStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return HandleStats{Open: c.used, Max: c.max, Logs: len(c.ring.logs), Releases: c.releases.Load()}
}

// adjust changes l's counted handles by delta and, when that takes the total
// past the limit, releases other Logs (never l: the caller has it pinned).
// A nil cache counts nothing.
func (c *HandleCache) adjust(l *Log, delta int) {
	if c == nil || delta == 0 {
		return
	}
	c.mu.Lock()
	if l.handles == 0 && delta > 0 {
		c.ring.add(l)
	}
	l.handles += delta
	c.used += delta
	if l.handles <= 0 {
		c.used -= l.handles // never below zero
		l.handles = 0
		c.removeLocked(l)
	}
	over := c.used > c.max
	c.mu.Unlock()
	if over && delta > 0 {
		c.makeRoom(l)
	}
}

// forget drops l from the cache (Close, release).
func (c *HandleCache) forget(l *Log) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.used -= l.handles
	l.handles = 0
	c.removeLocked(l)
	c.mu.Unlock()
}

func (c *HandleCache) removeLocked(l *Log) { c.ring.remove(l) }

// makeRoom releases Logs, oldest use first, until the total is back under
// the limit, a sweep finds nothing releasable (every other Log in use: the
// limit is passed by the Logs in use, as the type allows) or releases keep
// losing races (maxReleaseMisses).
func (c *HandleCache) makeRoom(self *Log) {
	for misses := 0; misses <= maxReleaseMisses; {
		c.mu.Lock()
		if c.used <= c.max {
			c.mu.Unlock()
			return
		}
		victim := c.sweepLocked(self)
		c.mu.Unlock()
		if victim == nil {
			return
		}
		if victim.tryRelease(false) {
			c.releases.Add(1)
		} else {
			misses++
		}
	}
}

// maxReleaseMisses bounds the releases one makeRoom tries that fail (the
// victim was pinned, loading or merging its dedup runs after the sweep saw
// it): the next adjust tries again.
const maxReleaseMisses = 8

// dirtyLookahead is how many more Logs a sweep looks at for a clean victim
// once it has found one with unsynced appends.
const dirtyLookahead = 64

// sweepLocked advances the CLOCK hand to the first Log other than self that
// is not pinned and whose referenced bit is clear, clearing the bits it
// passes, and returns it. Logs with unsynced appends are passed over for up
// to dirtyLookahead more Logs: the next sync of a released dirty Log opens
// its active file again (unless a SyncFS pass covers it), while a clean one
// costs nothing more. nil when no Log is
// releasable: a first round that meets only self and pinned Logs stops
// there, without a second.
//
// Pinned Logs are skipped with plain loads. With 100,000 partitions, 16
// pushers pin about 1,600 Logs at once; the sweep used to treat them as
// candidates, so every makeRoom swept the ring again for each pinned victim
// it failed to release (quadratic in the Logs in use, 63 % of a push's CPU).
func (c *HandleCache) sweepLocked(self *Log) *Log {
	n := len(c.ring.logs)
	var dirty *Log
	sinceDirty, candidates := 0, 0
	for i := range 2*n + 1 {
		if i == n && candidates == 0 {
			return nil // one whole round of Logs in use: a second finds none either
		}
		l := c.ring.next()
		if dirty != nil {
			if sinceDirty++; sinceDirty > dirtyLookahead {
				return dirty
			}
		}
		if l == self || l.pins.Load() != 0 {
			continue
		}
		candidates++
		if l.referenced.Load() {
			l.referenced.Store(false)
			continue
		}
		if l.dirty() {
			if dirty == nil {
				dirty = l
			}
			continue
		}
		return l
	}
	return dirty
}

// Handle states of a Log (Log.hstate).
const (
	hLoaded    uint32 = iota // handles may be open; pins allowed
	hReleasing               // a release is checking for pins
	hReleased                // no handle open: the next pin reloads
)

// pin marks l in use for an operation that needs its file handles, loading
// them first when released. Every pin is matched by one unpin. Pins nest.
//
// The check is a Dekker pair with tryRelease: pin raises pins then reads the
// state, release writes the state then reads pins, so one of them always sees
// the other.
func (l *Log) pin() error {
	for {
		l.pins.Add(1)
		if l.hstate.Load() == hLoaded {
			l.referenced.Store(true)
			l.used.Store(true)
			return nil
		}
		l.pins.Add(-1)
		if err := l.load(); err != nil {
			return err
		}
	}
}

func (l *Log) unpin() { l.pins.Add(-1) }

// load reopens a released Log: the directory listing when it was opened from
// a Summary, else just the active file (its fileInfo is current: everything
// was published before the release).
func (l *Log) load() error {
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.hstate.Load() == hLoaded {
		return nil
	}
	if l.unlisted {
		rep, err := l.listAndOpen(&RecoveryReport{})
		if err != nil {
			return err
		}
		if rep.Repaired() && l.opts.OnRecover != nil {
			l.opts.OnRecover(l.dir, rep)
		}
	} else if n := len(l.files); n > 0 {
		of, err := l.openFileInfo(l.files[n-1], false, false, true, nil)
		if err != nil {
			return err
		}
		of.refs.Store(1)
		l.mu.Lock()
		l.active = of
		l.mu.Unlock()
	}
	l.hstate.Store(hLoaded)
	l.referenced.Store(true)
	if l.active != nil {
		l.cache.adjust(l, 2)
	}
	return nil
}

// Release closes l's file handles and drops its dedup index (table and run
// filters, also when a HandleCache release kept them), keeping only its file
// list, offsets and timestamps in memory; the next operation that
// needs a handle reopens the active file (seed 004: a partition idle for 10
// minutes leaves memory and is loaded again by its next message).
//
// Appends to the active file that no sync covers yet stay unsynced: a
// released Log can be dirty, and its next Sync (a flush pass's, Close's)
// opens the active file by name for one fdatasync without loading the Log,
// or a SyncFS pass covers it as it covers loaded Logs. Linux writes back a
// file's dirty pages through any descriptor and reports a writeback error no
// descriptor has seen to the next one opened (since 4.16), so closing the
// handle loses neither the data nor a failure. Sealed files a deferred
// rotation left unsynced are synced here first (their handles are what
// tracks them). Releasing used to fdatasync every dirty Log on the path of
// the append that made room: 1.7 syncs per push request with 100,000
// partitions (issue 14).
//
// It does nothing and returns false while an operation is using l (a read,
// an append, a dedup lookup) or a dedup merge runs, or when l is closed or
// released with no dedup index in memory.
// Safe for concurrent use with every other method.
func (l *Log) Release() bool { return l.tryRelease(true) }

// Loaded reports whether l holds open handles (false after Release or a
// release by the HandleCache until the next use, and for a Log opened from a
// Summary until its first use). Its dedup index may be in memory while its
// handles are not: see DedupLoaded.
func (l *Log) Loaded() bool { return l.hstate.Load() == hLoaded }

// TakeUsed reports whether l was used (pinned) since the previous call and
// clears the mark; the broker's idle eviction polls it.
func (l *Log) TakeUsed() bool { return l.used.Swap(false) }

// tryRelease closes every handle of an unpinned Log. With dropDedup
// (Release) it also drops the dedup index, and does only that on a Log whose
// handles the cache closed already; without it (the HandleCache making
// room) the dedup files are parked and the index stays in memory
// (dedupPark). It never blocks on a user of l: a held loadMu, a pin or a
// held dedup lock makes it give up.
func (l *Log) tryRelease(dropDedup bool) bool {
	if !l.loadMu.TryLock() {
		return false
	}
	defer l.loadMu.Unlock()
	if l.closed.Load() {
		return false
	}
	if l.hstate.Load() == hReleased {
		// The HandleCache closed the handles and kept the dedup index:
		// Release drops it too.
		return dropDedup && l.dedup.DropParked()
	}
	if l.hstate.Load() != hLoaded {
		return false
	}
	l.hstate.Store(hReleasing)
	if l.pins.Load() != 0 || (dropDedup && l.dedup.Merging()) {
		l.hstate.Store(hLoaded) // a dedup merge would be waited for: try again later
		return false
	}
	// No operation uses l's handles until hstate is hLoaded again.
	l.syncMu.Lock()
	err := l.syncPendingLocked(nil)
	l.syncMu.Unlock()
	if err != nil {
		l.hstate.Store(hLoaded)
		return false
	}
	if dropDedup {
		_ = l.dedup.Drop()
	} else if !l.dedup.Park() {
		l.hstate.Store(hLoaded) // a lookup or merge swap holds the dedup lock: try again later
		return false
	}
	l.syncMu.Lock()
	l.mu.Lock()
	l.closePendingLocked() // none left: synced above
	if l.active != nil {
		l.active.close(false)
		l.active = nil
	}
	l.handleMu.Lock()
	if s := l.sealed; s != nil {
		l.sealed = nil
		s.unref()
	}
	l.handleMu.Unlock()
	l.mu.Unlock()
	l.syncMu.Unlock()
	l.hstate.Store(hReleased)
	l.cache.forget(l)
	return true
}
