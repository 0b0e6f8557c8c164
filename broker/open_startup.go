package broker

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

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
const cleanFileName = "clean"

// takeCleanMarker reads and removes the clean-shutdown marker. When there is
// none (a crash) it returns the last summary checkpoint (flush_summaries.go), and
// nil (verify every log) when that is missing or damaged too. The removal is made
// durable before Open goes on: after a crash from here on, the next Open must
// not trust summaries the appends of this run have outdated.
func (b *Broker) takeCleanMarker() (map[[16]byte]segment.Summary, error) {
	dir := filepath.Join(b.dir, "meta")
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

// openPartitionLog opens a partition's (or a DLQ's) log for recovery. Its
// file is durable up to its summary's next offset (the flush pass noted it
// before the sync, flush.go), and the commit log holds every segment from
// its first retained entry's base on; what lies past both was written
// unsynced and is garbage-or-replayed, so the log keeps max(summary, base)
// (segment.OpenFrom) and the replay appends the rest. A summary whose stamp
// still matches, with no retained entry, opens from the summary alone (two
// stats, nothing read). A partition the commit log made after the last
// metadata snapshot, with neither, keeps nothing (nothing of it was synced).
// Without any of that (a directory from before the commit log) the log is
// opened and its tail verified.
func (b *Broker) openPartitionLog(id [16]byte, dir string) (*segment.Log, *segment.RecoveryReport, error) {
	return b.openLogAt(id, dir, b.segOpts)
}

// openLogAt is openPartitionLog for any log (partitions and DLQs).
func (b *Broker) openLogAt(id [16]byte, dir string, opts segment.Options) (*segment.Log, *segment.RecoveryReport, error) {
	s, hasSum := b.summaries[id]
	base, hasBase := b.walScan.bases[id]
	switch {
	case hasSum && !hasBase && s.Stamp != 0 && segment.SummaryMatches(dir, s):
		return segment.OpenSummary(dir, opts, s), &segment.RecoveryReport{}, nil
	case b.cfg.Replicated != nil:
		// Past its summary a replicated node's file may hold segments the
		// cluster never committed (follow_commit.go); raft applies every
		// committed entry after its last snapshot again, which the summary
		// covers. No summary: made after the last flush pass, all of it
		// comes again.
		return b.openLogFrom(dir, opts, max(s.NextOffset, 1))
	case hasSum && !hasBase && b.cleanStart:
		// After a clean shutdown everything was synced: files that changed
		// since were changed by someone (restored from a copy): they are
		// verified and trusted as they are, and cursors past them clamped.
		b.log.Warn().Str("id", uuidString(id)).Str("dir", dir).
			Msg("start-up: files changed since the clean shutdown; verifying the log")
		return segment.Open(dir, opts)
	case hasSum || hasBase || b.walScan.created[id]:
		keep := uint64(1)
		if hasSum {
			keep = s.NextOffset
		}
		if hasBase {
			keep = max(keep, base)
		}
		return b.openLogFrom(dir, opts, keep)
	}
	return segment.Open(dir, opts)
}

// openLogFrom opens the log in dir keeping the offsets below keep
// (segment.OpenFrom). keep 1 is a log made after the last flush pass: a
// crash may have taken its (unsynced) directory, and the commit log replays
// it into a new one.
func (b *Broker) openLogFrom(dir string, opts segment.Options, keep uint64) (*segment.Log, *segment.RecoveryReport, error) {
	if keep == 1 {
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
		if p := b.parts[id]; p != nil && p.sum.Stamp != 0 {
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
		st, err := segment.Stamp(filepath.Join(b.dir, "partitions", uuidString(ids[i])), sums[ids[i]])
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
	data, err := b.fs.ReadFile(filepath.Join(b.dir, "meta", summariesFileName))
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

// adoptSummaries ends Open's use of the summaries: those a log was opened
// from (stamp matched, nothing read) seed the checkpoint pass, which then
// need not stat them again.
func (b *Broker) adoptSummaries() {
	for id, p := range b.parts {
		if s, ok := b.summaries[id]; ok && !p.log.Loaded() && !p.isDamaged() {
			p.sum = s
		}
	}
	b.summaries = nil
}
