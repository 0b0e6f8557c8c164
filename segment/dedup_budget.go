package segment

// The dedup memory budget (issue 23). A Log's dedup index in memory (its
// active table, and each sealed run's filter and page index) is what a
// lookup needs to answer without reading every run file again; rebuilding it
// reads and hashes every run of the log (64 % of a push's CPU once the
// partitions' files passed the handle budget and every eviction dropped it).
// So it is not tied to the Log's file handles: the HandleCache closes
// handles (Log.tryRelease parks the dedup files, dedup.Index.Park) and keeps
// the indexes, which leave memory only when the dedup indexes of all the
// Logs sharing the cache pass its byte budget (SetDedupBudget), least
// recently used first, or when the Log is released as idle (Release) or
// closed.

// DefaultDedupBudget is the bytes of dedup index the Logs sharing a
// HandleCache keep in memory unless told otherwise (SetDedupBudget): the
// filters of ~400 M retained ids at 1.28 bytes an id (filter and page index)
// with 100 partitions' active tables (128 KiB each), about ten minutes of
// issue 23's sustained push. Past it an evicted index costs a reload of its
// run files when next used (a rebuild of each run's filter).
const DefaultDedupBudget = 512 << 20

// SetDedupBudget sets the bytes of dedup index the Logs sharing c keep in
// memory (≤ 0: no bound). The budget applies from the next change of a
// Log's dedup memory on.
func (c *HandleCache) SetDedupBudget(bytes int64) {
	c.mu.Lock()
	c.dmax = bytes
	c.mu.Unlock()
}

// DedupStats is a snapshot of a HandleCache's dedup memory accounting.
type DedupStats struct {
	Bytes     int64  // dedup index bytes held in memory now, over every Log sharing the cache
	Budget    int64  // the configured bound (≤ 0: none)
	Logs      int    // Logs whose dedup index is in memory
	Evictions uint64 // dedup indexes dropped to stay within the budget, since NewHandleCache
}

// DedupStats returns the dedup memory counters.
func (c *HandleCache) DedupStats() DedupStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return DedupStats{Bytes: c.dused, Budget: c.dmax, Logs: len(c.dring.logs), Evictions: c.devictions.Load()}
}

// dedupSet records that l's dedup index holds n bytes and, when that takes
// the total past the budget, drops other Logs' dedup indexes (never l's: its
// caller holds its dedup lock). The caller holds l.dedup.mu. A nil cache
// counts nothing.
func (c *HandleCache) dedupSet(l *Log, n int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	grew := n > l.dbytes
	if l.dbytes == 0 && n > 0 {
		c.dring.add(l)
	}
	c.dused += n - l.dbytes
	l.dbytes = n
	if n == 0 {
		c.dremoveLocked(l)
	}
	over := c.dmax > 0 && c.dused > c.dmax
	c.mu.Unlock()
	if over && grew {
		c.dedupMakeRoom(l)
	}
}

func (c *HandleCache) dremoveLocked(l *Log) { c.dring.remove(l) }

// dedupMakeRoom drops the dedup indexes of Logs other than self, least
// recently used first (CLOCK, as for handles), until the total is within the
// budget, a sweep finds no other Log, or drops keep losing races (the
// victim's dedup lock was held, or it was merging).
func (c *HandleCache) dedupMakeRoom(self *Log) {
	for misses := 0; misses <= maxReleaseMisses; {
		c.mu.Lock()
		if c.dmax <= 0 || c.dused <= c.dmax {
			c.mu.Unlock()
			return
		}
		victim := c.dsweepLocked(self)
		c.mu.Unlock()
		if victim == nil {
			return
		}
		if victim.dedupEvict() {
			c.devictions.Add(1)
		} else {
			misses++
		}
	}
}

// dsweepLocked advances the dedup CLOCK hand to the first Log other than
// self whose dedup-referenced bit is clear, clearing the bits it passes.
// nil when the ring holds no other Log.
func (c *HandleCache) dsweepLocked(self *Log) *Log {
	n := len(c.dring.logs)
	for range 2*n + 1 {
		l := c.dring.next()
		if l == self {
			continue
		}
		if l.dref.Swap(false) {
			continue
		}
		return l
	}
	return nil
}

// dedupEvict drops l's dedup index to make room in the budget. It never
// blocks (dedup.Index.TryEvict).
func (l *Log) dedupEvict() bool { return l.dedup.TryEvict() }
