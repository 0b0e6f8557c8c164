package segment

import (
	"fmt"
	"os"

	"github.com/combmq/comb/index"
)

// Lazy index files (issue 7). A segment index is a cache of its segment file,
// so the active file's index may live in memory until it is worth a file:
// creating one costs an inode (~185 µs on the project VM's ext4 in a
// 100,000-partition tree), which dominated creating a partition, and mapping
// it back dominated reopening a cold one. The index file is written when the
// active file reaches LazyIndexSegments segments or LazyIndexBytes bytes, when
// it is sealed (rotation), or when Open finds it past either threshold.
// Below both, an active file with no index file is the normal state: Open
// rebuilds the entries by verifying the whole (small) file, and fsck accepts
// it (IndexOptional).
const (
	LazyIndexSegments = 16      // segments at which the active file's index file is written
	LazyIndexBytes    = 1 << 20 // bytes at which it is written (bounds Open's scan of a file without one)
)

// indexFileSegments is LazyIndexSegments; tests of recovery with an index
// file lower it to 1 (index file from the first segment, as before issue 7).
var indexFileSegments = LazyIndexSegments

// lazyIndexDue reports whether an in-memory index of a file with segments
// segments and size bytes must now be written to its file.
func lazyIndexDue(segments int, size int64) bool {
	return segments >= indexFileSegments || size >= LazyIndexBytes
}

// heapBacking is an index.Backing in process memory: the active file's index
// until it is written out. It survives the openFile (fileInfo.heap keeps it,
// cut to its entries: 32 bytes a segment), so reopening a released log's
// small active file rebuilds nothing and maps nothing.
type heapBacking struct{ b []byte }

func (h *heapBacking) Size() (int64, error) { return int64(len(h.b)), nil }

func (h *heapBacking) Map(size int64) ([]byte, error) {
	if int64(len(h.b)) == size {
		return h.b, nil
	}
	b := make([]byte, size)
	copy(b, h.b)
	h.b = b
	return b, nil
}

// Close keeps the bytes: they are the index while the file has none.
func (h *heapBacking) Close() error { return nil }

// writeIndexLocked moves of's in-memory index to its index file. l.mu must be
// held exclusively (readers use the entries under mu shared). On error the
// index stays in memory and keeps working; a later append, rotation, Close
// or Open tries again.
func (l *Log) writeIndexLocked(of *openFile) error {
	fi := of.info
	if fi.heap == nil {
		return nil
	}
	back, err := l.fs.OpenMapped(join(l.dir, idxName(fi.base)))
	if err != nil {
		return fmt.Errorf("index %s: %w", idxName(fi.base), err)
	}
	if err := of.idx.MoveTo(back); err != nil {
		_ = back.Close()
		return err
	}
	fi.heap, fi.idxOnDisk = nil, true
	return nil
}

// IndexOptional reports whether the segment file at segPath, when it is the
// newest file of its log, may lack its index file (see LazyIndexSegments):
// it holds fewer than LazyIndexSegments whole, checksum-valid segments and
// is shorter than LazyIndexBytes. segments is the number of whole segments
// before the first damage or the end (what the missing index would hold).
// Read-only; fsck uses it.
func IndexOptional(segPath string) (segments int, optional bool, err error) {
	f, err := os.Open(segPath)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if st.Size() >= LazyIndexBytes {
		return 0, false, nil
	}
	sc := scanner{f: f, size: st.Size()}
	for pos := int64(0); pos < sc.size && segments < indexFileSegments; segments++ {
		h, err := sc.header(pos)
		if err == nil {
			_, err = sc.segment(pos, h)
		}
		if err != nil {
			break
		}
		pos += h.size()
	}
	return segments, segments < indexFileSegments, nil
}

// ensure heapBacking satisfies the seam.
var _ index.Backing = (*heapBacking)(nil)
