package broker

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// Summaries (issue 7: after a crash, only the tails written since the last
// checkpoint are read). Every flush pass (flush.go) records in
// <data>/meta/summaries, for every partition and DLQ log, the next offset its
// file is durable up to, and for each log nothing was appended to since, its
// segment.Summary with the stamp of its files (segment.Stamp): a summaries
// file of package segment, like the clean-shutdown marker (open_startup.go).
// After a crash Open trusts a stamped entry exactly like a clean-shutdown
// record, only while the stamp still matches (the log is then not opened at
// all), and cuts every other log to its entry's durable offset or its first
// commit-log base (openByPlan).
const summariesFileName = layout.Summaries

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
	return b.writeSummaryBytes(name, segment.EncodeSummaries(sums))
}

// writeSummaryBytes replaces meta/<name> with data (see writeSummaryFile).
func (b *Broker) writeSummaryBytes(name string, data []byte) error {
	if err := vfs.WriteFileAtomic(b.fs, filepath.Join(b.dir, layout.Meta, name), data, b.noSync()); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	return nil
}
