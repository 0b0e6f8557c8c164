package dedup

import "github.com/combmq/comb/index"

// Merging and rewriting runs in the background. A job (a merge of two
// neighbouring runs, or the rewrite of the oldest run without the ids
// retention removed) reads its runs, writes the new run and builds its
// filter without holding the dedup lock (the largest merge of a partition of
// 500,000 ids held it ~190 ms, stalling that partition's pushes); it then
// takes the lock only to swap the new run in. Lookups meanwhile use the old
// runs, whose files stay until the swap. A job whose runs changed meanwhile
// (retention dropped one, a lookup rebuilt a damaged one, the log was
// released) is thrown away: its file is removed and nothing is swapped.
// At most one job goroutine runs per log; Drop (the log's Close) stops it after
// the job under way and waits for it, and Release leaves a log that is busy
// with one alone until the next try. A release by the handle cache (Park) does not
// wait for it: it only closes handles, and jobs read and write run files by
// name.

// dedupJobSlots bounds the jobs running at once across all logs: a job holds
// its runs' entries in memory (16 bytes an id, twice over while merging), so
// a hundred partitions merging their largest runs together would hold
// gigabytes for a moment (the 50 M-message benchmark peaked at 675 MB of RSS
// without the bound). Jobs waiting for a slot hold nothing.
var dedupJobSlots = make(chan struct{}, 2)

// dedupJob is a merge of a and b (neighbours, a older) or, with b nil, the
// rewrite of a (the oldest run) from offset from.
type dedupJob struct {
	a, b *dedupRun
	from uint64
}

// nextJobLocked returns the job due: the rewrite of the oldest run when
// retention removed half of it, else the newest pair of neighbouring runs
// whose older holds no more ids than the newer (the binary counter's rule).
func (d *Index) nextJobLocked() (dedupJob, bool) {
	if d.rewriteDueLocked() {
		return dedupJob{a: d.runs[0], from: d.trimmedAt}, true
	}
	for i := len(d.runs) - 2; i >= 0; i-- {
		if d.runs[i].hdr.Count <= d.runs[i+1].hdr.Count {
			return dedupJob{a: d.runs[i], b: d.runs[i+1]}, true
		}
	}
	return dedupJob{}, false
}

// startMergeLocked starts the job goroutine when a job is due and none runs.
func (d *Index) startMergeLocked() {
	if d.merging {
		return
	}
	job, ok := d.nextJobLocked()
	if !ok {
		return
	}
	d.merging = true
	d.mergeWG.Add(1)
	go d.runJobs(job)
}

// runJobs does job, then every job due after it, until none is due or one
// fails (its runs are kept as they are; tried again after the next seal or
// retention). A job that failed because its runs went meanwhile (retention
// removed their files) is no failure: the next one is done.
func (d *Index) runJobs(job dedupJob) {
	defer d.mergeWG.Done()
	for {
		dedupJobSlots <- struct{}{}
		if d.mergeStop.Load() {
			<-dedupJobSlots
			d.mu.Lock()
			d.merging = false
			d.mu.Unlock()
			return
		}
		var r *dedupRun
		var err error
		if job.b == nil {
			r, err = d.rewriteRun(job.a, job.from)
		} else {
			r, err = d.mergeRunFiles(job.a, job.b)
		}
		<-dedupJobSlots
		d.mu.Lock()
		if err == nil {
			d.swapLocked(job, r)
			d.accountLocked()
		} else if d.runIndexLocked(job.a) < 0 || (job.b != nil && d.runIndexLocked(job.b) < 0) {
			err = nil // stale: retention dropped a run (and its file) meanwhile; go on
		}
		next, ok := d.nextJobLocked()
		if err != nil || !ok || !d.loaded || d.mergeStop.Load() {
			d.merging = false
			d.mu.Unlock()
			return
		}
		job = next
		d.mu.Unlock()
	}
}

// swapLocked puts r in the place of the job's runs and removes their files,
// or, when they changed meanwhile, removes r's file instead.
func (d *Index) swapLocked(job dedupJob, r *dedupRun) {
	i := d.runIndexLocked(job.a)
	switch {
	case !d.loaded || i < 0:
	case job.b == nil:
		d.closeRunsLocked(job.a)
		d.runs[i] = r
		if r.name() != job.a.name() {
			_ = d.cfg.FS.Remove(d.path(job.a.name())) // the new run starts later: sorts after, redundant
		}
		return
	case i+1 < len(d.runs) && d.runs[i+1] == job.b:
		d.closeRunsLocked(job.a, job.b)
		d.runs = append(d.runs[:i:i], append([]*dedupRun{r}, d.runs[i+2:]...)...)
		// The merged file sorts before the two it replaces (same first,
		// later last), so a crash before these removes leaves redundant
		// runs the load deletes.
		_ = d.cfg.FS.Remove(d.path(job.a.name()))
		_ = d.cfg.FS.Remove(d.path(job.b.name()))
		return
	}
	if !d.runNamedLocked(r.name()) {
		_ = d.cfg.FS.Remove(d.path(r.name())) // unless a later load took it up
	}
}

// runNamedLocked reports whether a run in memory has the file name.
func (d *Index) runNamedLocked(name string) bool {
	for _, x := range d.runs {
		if x.name() == name {
			return true
		}
	}
	return false
}

// runIndexLocked returns r's index in d.runs, or -1.
func (d *Index) runIndexLocked(r *dedupRun) int {
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
func (d *Index) mergeRunFiles(a, b *dedupRun) (*dedupRun, error) {
	_, ea, err := d.readRun(a.hdr.First, a.hdr.Last)
	if err != nil {
		return nil, err
	}
	_, eb, err := d.readRun(b.hdr.First, b.hdr.Last)
	if err != nil {
		return nil, err
	}
	merged := index.MergeRunEntries(make([]index.RunEntry, 0, len(ea)+len(eb)), ea, eb)
	return d.writeRun(a.hdr.First, b.hdr.Last, merged)
}

// WaitMerges waits for the job goroutine (tests, Drop, Undo).
func (d *Index) WaitMerges() { d.mergeWG.Wait() }

// Merging reports whether the job goroutine runs (a release that would wait
// for it tries again later).
func (d *Index) Merging() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.merging
}
