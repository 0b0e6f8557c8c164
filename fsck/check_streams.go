package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/vfs"
)

// checkStreams verifies <data>/streams (docs/format.md, "Streams state"):
// every file's frame and body, each snapshot against the registry (its
// query known, not older than the query's last reset) and the metadata (its
// partition live), and the LSNs the files hold against the commit log's end.
func (c *checker) checkStreams() {
	f := &streams.Files{FS: vfs.OS, Root: filepath.Join(c.dir, streams.Dir)}
	l, err := f.Load()
	var fe *streams.FileError
	switch {
	case errors.As(err, &fe):
		rel, _ := filepath.Rel(c.dir, fe.File)
		var size int64 // each file is one frame: the damage is the file
		if st, err := os.Stat(fe.File); err == nil {
			size = st.Size()
		}
		c.rep.add(Finding{Kind: KindStreamsCorrupt, Severity: SeverityDamaged, File: rel, EndByte: size,
			Detail: fmt.Sprintf("%v: the server refuses to start; the state it holds is lost unless the commit log still has it", fe.Err)})
		return
	case err != nil:
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: streams.Dir, Detail: err.Error()})
		return
	}
	c.rep.Totals.StreamQueries = len(l.Registry.Queries)
	c.rep.Totals.StreamShards = len(l.Snapshots)
	resets := make(map[[16]byte]uint64, len(l.Registry.Queries))
	for _, q := range l.Registry.Queries {
		resets[q.ID] = q.ResetLSN
	}
	if c.wal != nil && c.wal.Present && c.wal.Last > 0 && l.Registry.Covers > c.wal.Last {
		c.rep.add(Finding{Kind: KindStreamsCorrupt, Severity: SeverityDamaged, File: filepath.Join(streams.Dir, streams.RegistryFile),
			Detail: fmt.Sprintf("covers LSN %d but the commit log ends at %d: entries were lost", l.Registry.Covers, c.wal.Last)})
	}
	for i := range l.Snapshots {
		c.checkSnapshot(&l.Snapshots[i], l.Paths[i], resets)
	}
}

// checkSnapshot judges one shard snapshot (see checkStreams).
func (c *checker) checkSnapshot(s *streams.Snapshot, path string, resets map[[16]byte]uint64) {
	rel, _ := filepath.Rel(c.dir, path)
	reset, known := resets[s.Query]
	stale := ""
	switch {
	case !known:
		stale = "its query " + uuid.UUID(s.Query).String() + " is not registered"
	case s.LSN < reset:
		stale = fmt.Sprintf("it holds LSN %d, older than its query's reset at %d", s.LSN, reset)
	case c.meta != nil && c.meta.Present && !c.partitionKnown(s.Partition):
		stale = "its partition is not in the metadata (its queue was deleted)"
	}
	if stale != "" {
		c.rep.add(Finding{Kind: KindStreamsStale, Severity: SeverityInfo, File: rel, PartitionID: uuid.UUID(s.Partition).String(),
			Detail: stale + ": the server removes it at start"})
		return
	}
	if c.wal != nil && c.wal.Present && c.wal.Last > 0 && s.LSN > c.wal.Last {
		c.rep.add(Finding{Kind: KindStreamsCorrupt, Severity: SeverityDamaged, File: rel, PartitionID: uuid.UUID(s.Partition).String(),
			Detail: fmt.Sprintf("holds LSN %d but the commit log ends at %d: entries were lost", s.LSN, c.wal.Last)})
	}
}

// partitionKnown reports whether the metadata names partition id.
func (c *checker) partitionKnown(id [16]byte) bool {
	_, ok := c.meta.Partitions[id]
	return ok
}
