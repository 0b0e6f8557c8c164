package segment

import "github.com/combmq/comb/index"

// Merging runs in the background. A merge reads two neighbouring runs,
// writes the merged run and builds its filter without holding the dedup
// lock (the largest merges of a partition of 500,000 ids took ~190 ms under
// it, stalling that partition's pushes); it then takes the lock only to swap
// the two runs for the merged one. Lookups meanwhile use the two runs, whose
// files stay until the swap. A merge whose runs changed meanwhile (retention
// rewrote or dropped one, a lookup rebuilt a damaged one, the log was
// released) is thrown away: its file is removed and nothing is swapped.
// At most one merge goroutine runs per log; dedupFlush (Close) stops it after
// the merge under way and waits for it, and Release leaves a log that is
// merging alone until the next try.

// mergeDueLocked returns the newest pair of neighbouring runs i, i+1 whose
// older holds no more ids than the newer (the binary counter's rule).
func (d *dedupState) mergeDueLocked() (int, bool) {
	for i := len(d.runs) - 2; i >= 0; i-- {
		if d.runs[i].hdr.Count <= d.runs[i+1].hdr.Count {
			return i, true
		}
	}
	return 0, false
}

// startMergeLocked starts the merge goroutine when a merge is due and none
// is running.
func (d *dedupState) startMergeLocked(l *Log) {
	if d.merging {
		return
	}
	i, ok := d.mergeDueLocked()
	if !ok {
		return
	}
	d.merging = true
	d.mergeWG.Add(1)
	go l.mergeRuns(d.runs[i], d.runs[i+1])
}

// mergeRuns merges a and b, then every pair due after them, until none is
// due or a merge fails (kept as they are, tried again after the next seal).
func (l *Log) mergeRuns(a, b *dedupRun) {
	d := &l.dedup
	defer d.mergeWG.Done()
	for {
		r, err := l.mergeRunFiles(a, b)
		d.mu.Lock()
		if err == nil {
			if i := d.runIndexLocked(a); d.loaded && i >= 0 && i+1 < len(d.runs) && d.runs[i+1] == b {
				d.runs = append(d.runs[:i:i], append([]*dedupRun{r}, d.runs[i+2:]...)...)
				// The merged file sorts before the two it replaces (same
				// first, later last), so a crash before these removes
				// leaves redundant runs the load deletes.
				_ = l.fs.Remove(join(l.dir, a.name()))
				_ = l.fs.Remove(join(l.dir, b.name()))
			} else if !d.runNamedLocked(r.name()) {
				_ = l.fs.Remove(join(l.dir, r.name())) // unless a later load took it up
			}
		}
		i, ok := d.mergeDueLocked()
		if err != nil || !ok || !d.loaded || d.mergeStop.Load() {
			d.merging = false
			d.mu.Unlock()
			return
		}
		a, b = d.runs[i], d.runs[i+1]
		d.mu.Unlock()
	}
}

// runNamedLocked reports whether a run in memory has the file name.
func (d *dedupState) runNamedLocked(name string) bool {
	for _, x := range d.runs {
		if x.name() == name {
			return true
		}
	}
	return false
}

// runIndexLocked returns r's index in d.runs, or -1.
func (d *dedupState) runIndexLocked(r *dedupRun) int {
	for i, x := range d.runs {
		if x == r {
			return i
		}
	}
	return -1
}

// mergeRunFiles writes the run merging a and b (neighbours, a older) and
// returns its in-memory part. Run files never change once written, so this
// needs no lock.
func (l *Log) mergeRunFiles(a, b *dedupRun) (*dedupRun, error) {
	_, ea, err := l.readRun(a.hdr.First, a.hdr.Last)
	if err != nil {
		return nil, err
	}
	_, eb, err := l.readRun(b.hdr.First, b.hdr.Last)
	if err != nil {
		return nil, err
	}
	merged := index.MergeRunEntries(make([]index.RunEntry, 0, len(ea)+len(eb)), ea, eb)
	return l.writeRun(a.hdr.First, b.hdr.Last, merged)
}

// dedupWaitMerges waits for the merge goroutine (tests, dedupFlush).
func (l *Log) dedupWaitMerges() { l.dedup.mergeWG.Wait() }

// dedupMerging reports whether the merge goroutine runs.
func (l *Log) dedupMerging() bool {
	d := &l.dedup
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.merging
}
