package broker

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/recovery"
	"github.com/combmq/comb/segment"
)

// The clean-shutdown marker <data>/meta/clean lets Open skip reading the
// partition logs (issue 7: start-up reads O(partitions) bytes, not the data).
// Close writes it last, after every log is synced and closed; Open reads it
// and removes it (durably) before anything can be appended, so a marker on
// disk always describes the logs exactly. After a crash there is no marker
// and every log is opened and its tail verified as before.
//
// Each entry carries the partition's newest file name and a stamp (two
// stats: segment.Stamp) taken after the log was closed. Open trusts an
// entry only when the stamp still matches the directory; files replaced
// since (restored from an older copy, edited by hand) fall back to the
// normal tail-verifying open, so their cursors are clamped to the real
// high-water mark.
//
// The file is a summaries file of package segment (EncodeSummaries,
// DecodeSummaries: one record frame, magic "CMSM"), shared with the summary
// checkpoint (flush_summaries.go) and read offline by comb fsck. A marker that
// does not decode is ignored (and removed): Open then verifies every log.
const cleanFileName = layout.Clean

// takeCleanMarker reads and removes the clean-shutdown marker. When there is
// none (a crash) it returns the last summary checkpoint (flush_summaries.go), and
// nil (verify every log) when that is missing or damaged too. The removal is made
// durable before Open goes on: after a crash from here on, the next Open must
// not trust summaries the appends of this run have outdated.
func (b *Broker) takeCleanMarker() (map[[16]byte]segment.Summary, error) {
	dir := filepath.Join(b.dir, layout.Meta)
	path := filepath.Join(dir, cleanFileName)
	data, err := b.fs.ReadFile(path)
	if isNotExist(err) {
		return b.readSummaryCheckpoint(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	sums, derr := segment.DecodeSummaries(data)
	if derr != nil {
		b.log.Warn().Err(derr).Msg("start-up: ignoring the clean-shutdown marker; verifying every partition log")
	}
	// A sound marker becomes the summary checkpoint (its entries stay valid
	// exactly as long as their stamps match), so a crash soon after this
	// start still opens only the logs written since.
	if derr == nil {
		err = b.fs.Rename(path, filepath.Join(dir, summariesFileName))
	} else {
		err = b.fs.Remove(path)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if err := b.syncDir(dir); err != nil {
		return nil, err
	}
	b.cleanStart = derr == nil
	return sums, nil
}

// writeCleanMarker records every partition's Summary after a clean Close of
// its log, with its stamp (reused from the last summary checkpoint when the
// offsets did not move); written to a temporary file, synced, then renamed
// into place.
func (b *Broker) writeCleanMarker(sums map[[16]byte]segment.Summary) error {
	b.stampSummaries(sums)
	return b.writeSummaryFile(cleanFileName, sums)
}

// openPartitionLog opens a partition's (or a DLQ's) log for recovery, by
// the start-up keep rule (package recovery, shared with comb fsck): its file
// is durable up to its summary's next offset (the flush pass noted it before
// the sync, flush.go; a clean Close after the last sync), and the commit log
// holds every segment from its first retained entry's base on; what lies
// past both was written unsynced and is garbage-or-replayed, so the log
// keeps max(summary, base) (segment.OpenFrom) and the replay appends the
// rest. Below that every offset must be there, whole and checksum-valid: a
// file cut short or damaged there is a *segment.CorruptionError (the caller
// takes the partition out of service and the files stay as they are), never
// a torn tail, after a crash and after a clean shutdown alike. A summary
// whose stamp still matches, with no retained entry, opens from the summary
// alone (two stats, nothing read). A partition the commit log made after the
// last metadata snapshot, with neither, keeps nothing (nothing of it was
// synced). Without any of that (a directory from before the commit log) the
// log is opened and its tail verified.
func (b *Broker) openPartitionLog(id [16]byte, dir string) (*segment.Log, *segment.RecoveryReport, error) {
	return b.openByPlan(id, recovery.Partition, dir, b.segOpts)
}

// openByPlan opens log id (a partition, or a queue's DLQ) as the keep rule
// plans it (recovery.Start.Plan, the plan fsck checks the files against).
func (b *Broker) openByPlan(id [16]byte, kind recovery.Kind, dir string, opts segment.Options) (*segment.Log, *segment.RecoveryReport, error) {
	s, hasSum := b.summaries[id]
	var unchanged func() bool
	if hasSum {
		unchanged = func() bool { return segment.SummaryMatches(dir, s) }
	}
	plan := b.walScan.rule.Plan(id, kind, unchanged)
	switch plan.Mode {
	case recovery.Summary:
		return segment.OpenSummary(dir, opts, s), &segment.RecoveryReport{}, nil
	case recovery.Below:
		if _, replayed := b.walScan.bases[id]; hasSum && s.Stamp != 0 && b.cleanStart && !replayed {
			// After a clean shutdown everything was synced: files that
			// changed since were changed by someone (restored from an
			// older copy, cut, edited by hand). Offsets missing below the
			// summary are damage, not a torn tail.
			b.log.Warn().Str("id", uuidString(id)).Str("dir", dir).Uint64("syncedNext", s.NextOffset).
				Msg("start-up: files changed since the clean shutdown; every offset it synced must still be there")
		}
		opts.KeepUnsynced = plan.Quarantine
		return b.openLogFrom(dir, opts, plan.Keep)
	}
	return segment.Open(dir, opts)
}

// syncedSummary is what start-up knew was synced of log id (the keep rule's
// offset, unstamped), or the zero Summary when nothing was. A partition found
// damaged keeps it as its summary entry (damagedSummary), so no later start
// forgets what was synced and cuts the damage as a torn tail.
func (b *Broker) syncedSummary(id [16]byte) segment.Summary {
	if plan := b.walScan.rule.Plan(id, recovery.Partition, nil); plan.Mode == recovery.Below && plan.Keep > 1 {
		return segment.Summary{FirstOffset: 1, NextOffset: plan.Keep}
	}
	return segment.Summary{}
}

// damagedSummary is the summary entry of a partition out of service: the last
// one written while it was sound (or start-up's syncedSummary), without its
// stamp (the next start must read the files). ok=false: none, nothing of it
// is known to be synced.
func damagedSummary(p *partition) (segment.Summary, bool) {
	s := p.sum
	s.Stamp = 0
	return s, s.NextOffset > 0
}

// openLogFrom opens the log in dir keeping the offsets below keep
// (segment.OpenFrom). keep 1 is a log made after the last flush pass: a
// crash may have taken its (unsynced) directory, and the commit log replays
// it into a new one.
func (b *Broker) openLogFrom(dir string, opts segment.Options, keep uint64) (*segment.Log, *segment.RecoveryReport, error) {
	if keep == 1 && (b.small == nil || !b.small.IsVirtual(dir)) {
		if err := b.fs.MkdirAll(dir); err != nil {
			return nil, nil, err
		}
		b.noteDir(dir)
	}
	return segment.OpenFrom(dir, opts, keep)
}

// stampSummaries fills each Summary's Stamp from its closed directory, on a
// few goroutines (two stats each). A partition whose stamp fails keeps 0:
// the next start verifies its log.
func (b *Broker) stampSummaries(sums map[[16]byte]segment.Summary) {
	ids := make([][16]byte, 0, len(sums))
	for id, s := range sums {
		p := b.parts[id]
		if p == nil || p.isDamaged() {
			continue // a DLQ log's, or a damaged one's: never stamped
		}
		if p.sum.Stamp != 0 {
			prev := p.sum
			s.Stamp = prev.Stamp
			if prev == s {
				sums[id] = s // offsets unchanged since the checkpoint stamped them
				continue
			}
		}
		ids = append(ids, id)
	}
	stamps := make([]uint64, len(ids))
	parallelFor(len(ids), func(i int) {
		st, err := segment.Stamp(filepath.Join(b.dir, layout.Partitions, uuidString(ids[i])), sums[ids[i]])
		if err == nil {
			stamps[i] = st
		}
	})
	for i, id := range ids {
		s := sums[id]
		s.Stamp = stamps[i]
		sums[id] = s
	}
}

// parallelFor runs fn(0..n-1) on startupWorkers goroutines and returns when
// every call has.
func parallelFor(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(startupWorkers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// startupWorkers is how many goroutines open or stat partition logs at start
// and stamp them at Close: the work is syscalls that mostly wait on the file
// system, so more than the cores.
const startupWorkers = 16

// fileBudget caps the partition file handles at half the process's soft
// RLIMIT_NOFILE (FileBudget), with a warning when that lowers want.
func (b *Broker) fileBudget(want int) int {
	var rl unix.Rlimit
	nofile := uint64(0)
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur != unix.RLIM_INFINITY {
		nofile = rl.Cur
	}
	got := FileBudget(want, nofile)
	if got != want {
		b.log.Warn().Int("maxOpenFiles", want).Uint64("rlimitNofile", nofile).Int("using", got).
			Msg("max open files above half the process's file limit; lowering it")
	}
	return got
}

// FileBudget is how many partition file handles a broker asked for want
// (Config.MaxOpenFiles; < 0 means no cap) holds under a soft RLIMIT_NOFILE of
// nofile descriptors (0: unknown or unlimited): at most half the limit,
// leaving the rest for connections, journals and DLQ reads, so a server
// started under a low `ulimit -n` degrades to more reopens instead of failing
// with EMFILE. `comb serve` sizes its connection cap next to the same number.
func FileBudget(want int, nofile uint64) int {
	if nofile == 0 || want < 0 {
		return want
	}
	return int(min(uint64(want), nofile/2))
}

// readSummaryCheckpoint returns meta/summaries, or nil when it is missing or
// damaged (every log is then verified). The file stays: its entries are
// trusted only while their stamps match, whatever happened since.
func (b *Broker) readSummaryCheckpoint() map[[16]byte]segment.Summary {
	data, err := b.fs.ReadFile(filepath.Join(b.dir, layout.Meta, summariesFileName))
	if err != nil {
		return nil
	}
	sums, err := segment.DecodeSummaries(data)
	if err != nil {
		b.log.Warn().Err(err).Msg("start-up: ignoring the summary checkpoint; verifying every partition log")
		return nil
	}
	return sums
}

// adoptSummaries ends the partitions' use of the summaries: those a log was
// opened from (stamp matched, nothing read) seed the checkpoint pass, which
// then need not stat them again. The DLQ logs are opened after it
// (openDLQsForReplay), which then drops the summaries.
func (b *Broker) adoptSummaries() {
	for id, p := range b.parts {
		if s, ok := b.summaries[id]; ok && !p.log.Loaded() && !p.isDamaged() {
			p.sum = s
		}
	}
}
