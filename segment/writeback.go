package segment

import (
	"fmt"

	"github.com/combmq/comb/vfs"
)

// A flush pass with a yield hook (Committer.SetYield) writes a file's
// unsynced bytes back in writeBackChunk pieces before its fdatasync, the
// hook called before each piece (vfs.WriteBacker, sync_file_range(2)): at
// 100,000 msg/s over 16 partitions a pass fdatasyncs ~16 MB per file, and
// the commit log's group commit, on the same device, would queue behind
// each of those whole (issue 23). In pieces, it queues behind one piece;
// the fdatasync that follows writes the rest and the file's metadata, and
// is what makes the file durable: a piece is only a hint to the device.

// writeBackChunk is the size of one piece (bytes): ~1-2 ms of writes on
// the project machine (2 vCPUs, ext4 on virtio), about one commit-log
// group commit.
const writeBackChunk = 512 << 10

// wbRange is the byte range of a segment file no sync covered yet; ok is
// false when that is not known (a file found at Open: synced whole).
type wbRange struct {
	from, to int64
	ok       bool
}

// writeBackRange is fi's unsynced range (syncMu and mu held, mu at least
// shared).
func (fi *fileInfo) writeBackRange() wbRange {
	return wbRange{from: min(fi.wbFrom, fi.size), to: fi.size, ok: fi.wbKnown}
}

// writeBackLocked writes r of f back in writeBackChunk pieces, calling yield
// before each, and leaves the last piece (at most writeBackChunk) to the
// fdatasync that follows (syncMu held). Nothing without a yield hook, a
// known range or a file that can (vfs.WriteBacker). A failure is sticky, as
// an fdatasync's: the write-back may have consumed the error the fdatasync
// would report (Linux reports a failed writeback once per descriptor).
func (l *Log) writeBackLocked(f file, r wbRange, yield func()) error {
	wb, ok := f.(vfs.WriteBacker)
	if yield == nil || !r.ok || !ok {
		return nil
	}
	for off := r.from; r.to-off > writeBackChunk; off += writeBackChunk {
		yield()
		if err := wb.WriteBack(off, writeBackChunk); err != nil {
			return l.failSyncLocked(fmt.Errorf("segment log %s: write back %s: %w", l.dir, f.Name(), err))
		}
	}
	return nil
}
