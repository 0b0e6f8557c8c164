package broker

import (
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/entrylog"
	"github.com/combmq/comb/layout"
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
	if ok {
		if b.elog.Extents(id) != nil {
			if err := b.elog.Trim(id, entrylog.Dropped); err != nil {
				return false, fmt.Errorf("broker: small partitions: %w", err)
			}
		}
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
	if _, err := b.elog.Compact(); err != nil {
		return err
	}
	return nil
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
