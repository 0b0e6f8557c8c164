package dedup

import (
	"errors"
	"slices"

	"github.com/combmq/comb/index"
)

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

// dedupJob is a merge of the runs in merge (neighbours, oldest first) or,
// with merge nil, the rewrite of a (the oldest run) from offset from.
type dedupJob struct {
	a      *dedupRun
	merge  []*dedupRun
	from   uint64
	global bool // instead: build the partition's filter again (global.go)
}

// DefaultMergeFanout is how many runs of one tier a merge takes (issue 23:
// merges that do not rewrite every id log2(ids/RunEntries) times). A run's
// tier is about log_fanout of its ids over RunEntries, so with 4 each id is
// rewritten about log4(ids/6,144) times (5 at 10 M ids, against 9.4 for
// the binary counter of fanout 2) while a partition holds up to 3 runs a
// tier; the partition's filter (global.go) keeps the lookups' probes from
// growing with them.
const DefaultMergeFanout = 4

// tier is the size class of a run of count ids: runs of one tier are merged
// fanout at a time into one of the next tier.
func (d *Index) tier(count int) int {
	t, c := 0, float64(count)/float64(d.cfg.RunEntries)+0.5
	for f := float64(d.cfg.MergeFanout); c >= f; c /= f {
		t++
	}
	return t
}

// nextJobLocked returns the job due: the rebuild of the partition's filter
// once it holds more ids than it was sized for, the rewrite of the oldest run when
// retention removed half of it, else the newest pair of neighbouring runs
// whose older holds no more ids than the newer (the binary counter's rule).
func (d *Index) nextJobLocked() (dedupJob, bool) {
	if d.globalDueLocked() {
		return dedupJob{global: true}, true
	}
	if d.rewriteDueLocked() {
		return dedupJob{a: d.runs[0], from: d.trimmedAt}, true
	}
	if d.cfg.MergeFanout <= 2 {
		for i := len(d.runs) - 2; i >= 0; i-- {
			if d.runs[i].hdr.Count <= d.runs[i+1].hdr.Count {
				return dedupJob{merge: d.runs[i : i+2 : i+2]}, true
			}
		}
		return dedupJob{}, false
	}
	// Size-tiered: the newest fanout neighbours of one tier (or whose
	// older is of a lower tier than the newest, which only a rewrite
	// shrinking a run leaves: merged up rather than kept small).
	k := d.cfg.MergeFanout
	for i := len(d.runs) - k; i >= 0; i-- {
		top := d.tier(d.runs[i+k-1].hdr.Count)
		ok := true
		for _, r := range d.runs[i : i+k-1] {
			if d.tier(r.hdr.Count) > top {
				ok = false
				break
			}
		}
		if ok {
			return dedupJob{merge: append([]*dedupRun(nil), d.runs[i:i+k]...)}, true
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
		var ok bool
		if job.global {
			job, ok = d.runGlobalJob()
		} else {
			job, ok = d.runRunJob(job)
		}
		if !ok {
			return
		}
	}
}

// takeSlot waits for a job slot; false (no slot held) when the index is
// being stopped meanwhile.
func (d *Index) takeSlot() bool {
	dedupJobSlots <- struct{}{}
	if d.mergeStop.Load() {
		<-dedupJobSlots
		return false
	}
	return true
}

// runRunJob merges or rewrites the job's runs (a slot held while it reads
// and writes them, not while it waits for the lock) and swaps the new run
// in, then picks the next job (nextLocked).
func (d *Index) runRunJob(job dedupJob) (dedupJob, bool) {
	if !d.takeSlot() {
		d.mu.Lock()
		return d.nextLocked(errStopped)
	}
	var r *dedupRun
	var err error
	if job.merge == nil {
		r, err = d.rewriteRun(job.a, job.from)
	} else {
		r, err = d.mergeRunFiles(job.merge)
	}
	<-dedupJobSlots
	if err == nil {
		d.mergedEntries.Add(uint64(r.hdr.Count))
	}
	d.mu.Lock()
	if err == nil {
		d.swapLocked(job, r)
		d.accountLocked()
	} else if job.staleLocked(d) {
		err = nil // stale: retention dropped a run (and its file) meanwhile; go on
	}
	return d.nextLocked(err)
}

// errStopped ends the job loop when Drop or Undo stops it.
var errStopped = errors.New("dedup: jobs stopped")

// runGlobalJob builds the partition's filter again and swaps it in, then
// picks the next job (nextLocked). It takes the runs under the lock, then
// a slot for the reads (none held while it waits for the lock).
func (d *Index) runGlobalJob() (dedupJob, bool) {
	d.mu.Lock()
	if !d.loaded || !d.globalDueLocked() {
		return d.nextLocked(nil)
	}
	d.rebuilding, d.rebuildPending = true, nil
	runs := append([]*dedupRun(nil), d.runs...)
	d.mu.Unlock()
	if !d.takeSlot() {
		d.mu.Lock()
		d.rebuilding, d.rebuildPending = false, nil
		return d.nextLocked(errStopped)
	}
	f, capacity, ids, err := d.rebuildGlobal(runs)
	<-dedupJobSlots
	d.mu.Lock()
	if !d.rebuilding {
		err = nil // dropped meanwhile: nothing to swap
	} else if err == nil {
		d.swapGlobalLocked(f, capacity, ids)
		d.accountLocked()
	} else {
		d.rebuilding, d.rebuildPending = false, nil
		for _, r := range runs {
			if d.runIndexLocked(r) < 0 {
				err = nil // stale: retention dropped a run (and its file) meanwhile; go on
				break
			}
		}
	}
	return d.nextLocked(err)
}

// nextLocked ends a job (d.mu held, released here): after err, or when no
// job is due, the index is dropped or stopped, it clears merging and
// returns false; otherwise it returns the next job.
func (d *Index) nextLocked(err error) (dedupJob, bool) {
	defer d.mu.Unlock()
	next, ok := d.nextJobLocked()
	if err != nil || !ok || !d.loaded || d.mergeStop.Load() {
		d.merging = false
		return dedupJob{}, false
	}
	return next, true
}

// staleLocked reports whether a run of the job left memory meanwhile.
func (job dedupJob) staleLocked(d *Index) bool {
	if job.merge == nil {
		return d.runIndexLocked(job.a) < 0
	}
	for _, r := range job.merge {
		if d.runIndexLocked(r) < 0 {
			return true
		}
	}
	return false
}

// swapLocked puts r in the place of the job's runs and removes their files,
// or, when they changed meanwhile, removes r's file instead.
func (d *Index) swapLocked(job dedupJob, r *dedupRun) {
	if job.merge == nil {
		if i := d.runIndexLocked(job.a); d.loaded && i >= 0 {
			d.closeRunsLocked(job.a)
			d.runs[i] = r
			if r.name() != job.a.name() {
				_ = d.cfg.FS.Remove(d.path(job.a.name())) // the new run starts later: sorts after, redundant
			}
			return
		}
	} else if i := d.runIndexLocked(job.merge[0]); d.loaded && i >= 0 && i+len(job.merge) <= len(d.runs) &&
		slices.Equal(d.runs[i:i+len(job.merge)], job.merge) {
		d.closeRunsLocked(job.merge...)
		d.runs = slices.Concat(d.runs[:i:i], []*dedupRun{r}, d.runs[i+len(job.merge):])
		// The merged file sorts before the runs it replaces (same first,
		// later last), so a crash before these removes leaves redundant
		// runs the load deletes.
		for _, x := range job.merge {
			_ = d.cfg.FS.Remove(d.path(x.name()))
		}
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

// mergeRunFiles writes the run merging runs (neighbours, oldest first) and
// returns its in-memory part: a k-way merge of their files, streamed (each
// page verified before an entry of it is merged, runstream.go). Run files
// never change once written, so this needs no lock. A file that does not
// verify fails the merge (its run is rebuilt by the lookup that touches the
// damage, or by the next load).
func (d *Index) mergeRunFiles(runs []*dedupRun) (*dedupRun, error) {
	count := 0
	in := make([]*runReader, 0, len(runs))
	defer func() {
		for _, x := range in {
			x.close()
		}
	}()
	for _, r := range runs {
		x, err := d.openRunReader(r.hdr.First, r.hdr.Last, nil)
		if err != nil {
			return nil, err
		}
		in = append(in, x)
		count += x.Header().Count
	}
	w, err := d.createRun(runs[0].hdr.First, runs[len(runs)-1].hdr.Last, count)
	if err != nil {
		return nil, err
	}
	heads := make([]index.RunEntry, len(in))
	live := in[:0:0]
	for i, x := range in {
		if e, ok := x.Next(); ok {
			heads[len(live)] = e
			live = append(live, in[i])
		}
	}
	for len(live) > 0 {
		m := 0
		for j := 1; j < len(live); j++ {
			if h := heads[j]; h.Hash < heads[m].Hash || (h.Hash == heads[m].Hash && h.Offset < heads[m].Offset) {
				m = j
			}
		}
		w.add(heads[m])
		if e, ok := live[m].Next(); ok {
			heads[m] = e
			continue
		}
		live = append(live[:m], live[m+1:]...)
		heads = append(heads[:m], heads[m+1:]...)
	}
	for _, x := range in {
		if err := x.err(); err != nil {
			w.abort()
			return nil, err
		}
	}
	return w.finish()
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
