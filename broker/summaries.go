package broker

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// Summary checkpoints (issue 7: after a crash, only the tails written since
// the last checkpoint are verified). Every summaryCheckpointEvery a
// background pass records, for each partition whose log is fully synced,
// its segment.Summary and the stamp of its files (segment.Stamp) in
// <data>/meta/summaries, same format as the clean-shutdown marker
// (startup.go). After a crash Open reads it and trusts an entry exactly like
// a clean-shutdown record: only while the stamp still matches. A partition
// appended to since its entry was taken has a new size and mtime, so it is
// opened and its tail verified; the others are not opened at all.
//
// Why a matching stamp is safe after a crash: the entry is taken under the
// partition lock (no append in between) while nothing appended is unsynced,
// so the Summary describes bytes that were durable then. A later append
// changes the newest file's size; if the crash lost that size change, the
// file is back to the stamped, durable state the Summary describes.
const (
	summariesFileName      = "summaries"
	summaryCheckpointEvery = 10 * time.Second
)

// summaryState is the checkpoint pass's state. Each partition keeps its
// last entry in partition.sum (no map: 100,000 partitions), reused while its
// offsets have not moved (no append, no retention), so a pass over idle
// partitions costs a lock each and no stat.
type summaryState struct {
	written int    // entries in the file last written
	buf     []byte // encoding buffer, reused
	stop    chan struct{}
	done    chan struct{}
}

// startSummaryCheckpoints runs the checkpoint pass in the background unless
// the maintenance task is off (tests drive checkpointSummaries by hand).
func (b *Broker) startSummaryCheckpoints() {
	if b.cfg.MaintenanceInterval < 0 {
		return
	}
	b.sums.stop, b.sums.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.sums.done)
		t := time.NewTicker(summaryCheckpointEvery)
		defer t.Stop()
		for {
			select {
			case <-b.closing:
				return
			case <-t.C:
				if err := b.checkpointSummaries(); err != nil {
					b.log.Warn().Err(err).Msg("summary checkpoint failed; a crash restart verifies more logs")
				}
			}
		}
	}()
}

// checkpointSummaries takes one pass and rewrites meta/summaries when an
// entry changed. Not safe for concurrent calls (one background goroutine).
func (b *Broker) checkpointSummaries() error {
	if err := b.enter(); err != nil {
		return nil
	}
	defer b.leave()
	parts := b.partitionList(nil)
	changed, n := false, 0
	for _, p := range parts {
		s, ok := b.partitionSummary(p)
		if s != p.sum {
			changed = true
			p.sum = s
		}
		if ok {
			n++
		}
	}
	if !changed && n == b.sums.written {
		return nil
	}
	b.sums.buf = appendSummaries(b.sums.buf[:0], n, func(yield func([16]byte, segment.Summary)) {
		for _, p := range parts {
			if p.sum.Stamp != 0 {
				yield(p.id, p.sum)
			}
		}
	})
	b.sums.written = n
	return b.writeSummaryBytes(summariesFileName, b.sums.buf)
}

// partitionSummary returns p's checkpoint entry: p.sum while the offsets are
// unchanged, else a new Summary and Stamp taken under the partition lock, or
// the zero Summary and ok=false when the log has unsynced appends, is
// damaged or deleted, or the stat fails.
func (b *Broker) partitionSummary(p *partition) (segment.Summary, bool) {
	if p.isDamaged() {
		return segment.Summary{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted || !p.log.Synced() {
		return segment.Summary{}, false
	}
	prev := p.sum
	if prev.Stamp != 0 && prev.NextOffset == p.log.NextOffset() && prev.FirstOffset == p.log.FirstOffset() {
		return prev, true
	}
	s := p.log.Summary()
	st, err := segment.Stamp(p.log.Dir(), s)
	if err != nil {
		return segment.Summary{}, false
	}
	s.Stamp = st
	return s, true
}

// writeSummaryFile replaces meta/<name> with sums: temporary file, fsync,
// rename, directory fsync (a crash leaves the old file or the new one).
func (b *Broker) writeSummaryFile(name string, sums map[[16]byte]segment.Summary) error {
	return b.writeSummaryBytes(name, encodeCleanMarker(sums))
}

// writeSummaryBytes replaces meta/<name> with data (see writeSummaryFile).
func (b *Broker) writeSummaryBytes(name string, data []byte) error {
	if err := vfs.WriteFileAtomic(b.fs, filepath.Join(b.dir, "meta", name), data, b.noSync()); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}
