package broker

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/smallfs"
	"github.com/combmq/comb/vfs"
)

// Small partitions (issue 23): with Config.SmallPartitions a new partition
// gets no directory, DESCRIPTOR or segment file (three inodes, ~1.2 ms of
// CPU on the project's VM, more than a whole push request). Its segment.Log
// runs on the smallfs seam: its records are in memory and in the commit log
// until the flush pass homes them in the shared entry log (<data>/small,
// docs/format.md section 12) and syncs it once for every small partition,
// before it records them as synced and truncates the commit log.
//
// Start-up opens the entry log whenever <data>/small exists, attaches every
// registered partition without a directory to it (openPartition), and drops
// the records of partitions the registry no longer holds (a deletion whose
// trim frame a crash lost).

// DefaultSmallPartitionBytes is where a small partition gets its own
// directory. Its three inodes cost ~1.2 ms of CPU on the project's VM
// (docs/benchmarks.md, "Creating partitions"), about what writing and
// reading back ~1 MiB more costs (a small partition's bytes are written
// twice: to the entry log, then to its own file); at 256 KiB the copy costs a
// quarter of the inodes it defers, and a first push of 100 messages of 200 B
// (~20 KiB) stays small for a dozen more.
const DefaultSmallPartitionBytes = 256 << 10

// smallLimit is the size past which a small partition is materialized: the
// configured threshold, and never more than half a segment file (a virtual
// directory holds one segment file, so it must move before a rotation).
func (b *Broker) smallLimit() int64 {
	n := b.cfg.SmallPartitionBytes
	if n <= 0 {
		n = DefaultSmallPartitionBytes
	}
	if m := b.segOpts.MaxFileBytes; m > 0 {
		n = min(n, m/2)
	}
	return max(n, 1)
}

// openSmall opens the entry log and the seam when small partitions are on
// or a data directory holds them; the partition logs then run on the seam.
func (b *Broker) openSmall() error {
	dir := filepath.Join(b.dir, layout.Small)
	ok, err := existsDir(b.fs, dir)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if !ok && !b.cfg.SmallPartitions {
		return nil
	}
	if b.cfg.Replicated != nil {
		// Not built for a cluster yet: a follower's apply, snapshot install
		// and the committed-offset cut have not been checked against the
		// seam (issue 23, stage 5).
		return fmt.Errorf("broker: small partitions (--small-partitions, %s) are not supported with replication yet", dir)
	}
	el, rep, err := entrylog.Open(dir, entrylog.Options{FS: b.fs, NoSync: b.noSync(),
		QuarantineDir: filepath.Join(b.dir, layout.Quarantine, layout.Small)})
	if err != nil {
		return fmt.Errorf("broker: small partitions: %w", err)
	}
	for _, c := range rep.Cuts {
		b.log.Warn().Str("file", c.File).Int64("at", c.From).Int64("bytes", c.To-c.From).Str("tail", c.Tail.String()).
			Str("keptAt", c.Kept).Msg("small partitions: cut an unsynced tail of the entry log (the commit log holds what it carried); its bytes are kept")
	}
	for _, f := range rep.BadSlots {
		b.log.Warn().Str("file", f).Msg("small partitions: the entry log's synced slot failed its check; read as nothing synced")
	}
	b.elog = el
	b.small = smallfs.New(b.fs, filepath.Join(b.dir, layout.Partitions), el)
	b.small.SetSmall(b.cfg.SmallPartitions)
	b.segOpts.FS = b.small
	return nil
}

// partFS is the file system of partition directories: the seam when small
// partitions are on, else the broker's.
func (b *Broker) partFS() vfs.FS {
	if b.small != nil {
		return b.small
	}
	return b.fs
}

// attachSmall makes a registered partition without a real directory small
// (its records are the entry log's), and drops the entry-log copy of one
// that has a directory (moved out, its trim lost). It reports whether dir
// is virtual now.
func (b *Broker) attachSmall(id [16]byte, dir string) (bool, error) {
	if b.small == nil {
		return false, nil
	}
	ok, err := existsDir(b.fs, dir)
	if err != nil {
		return false, fmt.Errorf("broker: %w", err)
	}
	if ok && b.elog.Extents(id) != nil {
		done, err := b.hasSegFile(dir)
		if err != nil {
			return false, fmt.Errorf("broker: %w", err)
		}
		if done {
			// Moved into its directory; the trim of its entry-log copy was lost.
			if err := b.elog.Trim(id, entrylog.Dropped); err != nil {
				return false, fmt.Errorf("broker: small partitions: %w", err)
			}
			return false, nil
		}
		// A materialization a crash interrupted before its segment file was
		// renamed in: the entry log still holds every record.
		b.log.Warn().Str("dir", dir).Msg("start-up: removing a partition directory whose move out of the shared entry log a crash interrupted")
		if err := b.fs.RemoveAll(dir); err != nil {
			return false, fmt.Errorf("broker: %w", err)
		}
		ok = false
	}
	if ok {
		return false, nil
	}
	if err := b.small.Attach(dir); err != nil {
		return false, fmt.Errorf("broker: small partitions: %w", err)
	}
	return true, nil
}

// dropUnregisteredSmall trims the entry-log records of partitions the
// registry does not hold (deleted queues whose trim a crash lost). The
// caller holds what applyMeta holds.
func (b *Broker) dropUnregisteredSmall() error {
	if b.elog == nil {
		return nil
	}
	for _, id := range b.elog.Partitions() {
		if b.parts[id] != nil {
			continue
		}
		if err := b.elog.Trim(id, entrylog.Dropped); err != nil {
			return fmt.Errorf("broker: small partitions: %w", err)
		}
	}
	return nil
}

// homeSmall homes, for every small partition of the pass, the segments
// below the offset the pass records as synced (nexts[i]: what the commit log
// made durable), then syncs the entry log once, compacting it when files are
// mostly dead. It runs after the logs' syncs and before the summaries are
// written: a pass that fails here records and truncates nothing.
func (b *Broker) homeSmall(parts []*partition, nexts []uint64) error {
	if b.small == nil {
		return nil
	}
	for i, p := range parts {
		dir := p.log.Dir()
		if !b.small.IsVirtual(dir) {
			continue
		}
		if _, err := b.small.Home(dir, nexts[i]); err != nil {
			return fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
		}
	}
	if err := b.elog.Sync(); err != nil {
		return err
	}
	limit := b.smallLimit()
	for _, p := range parts {
		if b.small.Bytes(p.log.Dir()) >= limit {
			p.mu.Lock()
			err := b.materialize(p)
			p.mu.Unlock()
			if err != nil {
				// It stays small (the entry log has its records) and is
				// tried again at its next push or pass.
				b.log.Warn().Err(err).Str("queue", p.q.name).Str("partition", p.name).Msg("small partitions: could not move a partition into its own directory")
			}
		}
	}
	if _, err := b.elog.Compact(); err != nil {
		return err
	}
	return nil
}

// materialize gives small partition p its own directory (smallfs.FS.Materialize).
// The caller holds p.mu.
func (b *Broker) materialize(p *partition) error {
	dir := p.log.Dir()
	if !b.small.IsVirtual(dir) || p.deleted {
		return nil
	}
	// The DESCRIPTOR of a virtual directory is in memory: written again
	// from the registry (a restart since its creation lost it).
	if err := meta.WriteDescriptor(b.small, dir, partitionDescriptor(p), true); err != nil {
		return fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
	}
	if err := b.small.Materialize(dir, []string{meta.DescriptorFile}); err != nil {
		return fmt.Errorf("queue %s partition %s: %w", p.q.name, p.name, err)
	}
	return nil
}

// growSmall materializes p in the push path once it holds more than a
// segment file's worth less one push could take (twice the threshold): the
// flush pass moves partitions past the threshold, and a partition that grows
// faster than passes run must not need a second segment file while virtual.
// The caller holds p.mu.
func (b *Broker) growSmall(p *partition) error {
	if b.small == nil || b.small.Bytes(p.log.Dir()) < 2*b.smallLimit() {
		return nil
	}
	return b.materialize(p)
}

// hasSegFile reports whether dir holds a segment file.
func (b *Broker) hasSegFile(dir string) (bool, error) {
	names, err := b.fs.List(dir)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".seg") {
			return true, nil
		}
	}
	return false, nil
}

// closeSmall closes the entry log (after the last flush pass synced it).
func (b *Broker) closeSmall() error {
	if b.elog == nil {
		return nil
	}
	err := b.elog.Close()
	b.elog, b.small = nil, nil
	return err
}
