package dedup

// The index's memory (issue 23): its active table, pending entries, and each
// sealed run's filter and page index are what a lookup needs to answer
// without reading every run file again, so they are not tied to the log's
// file handles (Park keeps them). The owner bounds them across logs with a
// budget of bytes (segment's HandleCache.SetDedupBudget): Config.Memory
// hears every change, and TryEvict drops an index to make room.

// TryEvict drops the index to make room in a memory budget, writing its
// pending entries first. It never blocks: a held lock (a lookup, an append,
// a merge's swap) or a merge under way makes it give up (false).
func (d *Index) TryEvict() bool {
	if !d.mu.TryLock() {
		return false
	}
	defer d.mu.Unlock()
	if !d.loaded || d.merging {
		return false
	}
	_ = d.dropLocked()
	return true
}

// bytesLocked is the memory the index holds: the active table, the pending
// entries, the partition's filter, and each run's filter, page index and
// verified bitmap (a mapping's pages are the page cache's, not the heap's).
func (d *Index) bytesLocked() int64 {
	n := int64(d.table.Bytes() + cap(d.pending) + 8*cap(d.rebuildPending))
	if d.global != nil {
		n += int64(d.global.Bytes())
	}
	for _, r := range d.runs {
		n += int64(8*len(r.pageFirst) + 8*cap(r.verified))
		if r.filter != nil {
			n += int64(r.filter.Bytes())
		}
	}
	return n
}

// accountLocked tells Config.Memory what the index holds now (when it
// changed since the last time).
func (d *Index) accountLocked() {
	n := int64(0)
	if d.loaded {
		n = max(d.bytesLocked(), 1) // a loaded index is in the ring even when empty
	}
	if n != d.acct {
		d.acct = n
		if d.cfg.Memory != nil {
			d.cfg.Memory(n)
		}
	}
}

// Stats is a snapshot of an index's state, for tests and reports.
type Stats struct {
	Loaded        bool
	Loads         int         // loads since Init (a kept index is not reloaded)
	Bytes         int64       // memory held (as told to Config.Memory)
	TableLen      int         // ids in the active table
	RunsEnd       uint64      // the last offset the sealed runs cover (0: none)
	RunCounts     []int       // entries of each sealed run, oldest first
	RunRanges     [][2]uint64 // first and last offsets of each sealed run
	RunFilesOpen  int         // run files a lookup opened and keeps open (the pread path)
	RunsMapped    int         // run files a lookup mapped (runmap.go)
	FileOpen      bool        // dedup.idx is open for appending
	MergedEntries uint64      // entries written by merges and rewrites since Init
	Parked        bool        // dedup.idx was closed by Park, every entry written
}

// Stats returns the index's state under its lock.
func (d *Index) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Stats{Loaded: d.loaded, Loads: d.loads, Bytes: d.acct, TableLen: d.table.Len(), RunsEnd: d.runsEnd,
		FileOpen: d.f != nil, Parked: d.parked, MergedEntries: d.mergedEntries.Load()}
	for _, r := range d.runs {
		s.RunCounts = append(s.RunCounts, r.hdr.Count)
		s.RunRanges = append(s.RunRanges, [2]uint64{r.hdr.First, r.hdr.Last})
		if r.f != nil {
			s.RunFilesOpen++
		}
		if r.m != nil {
			s.RunsMapped++
		}
	}
	return s
}
