package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// StorageStatus is what the data directory holds and how its writes fare, for
// the dashboard's System view (GET /api/v1/storage) and any gauge that wants
// the same figures (Prometheus data-directory and free bytes).
type StorageStatus struct {
	DataDir string
	// DataBytes is the apparent size of every regular file under DataDir
	// (segments, indexes, commit log, cursors, metadata), from one walk of the
	// tree; DataFiles counts them. DataErr is why the walk stopped short
	// ("" when it did not): the figures then cover what it reached.
	DataBytes int64
	DataFiles int64
	DataErr   string
	// DiskFreeBytes is what an unprivileged writer may still use on the file
	// system holding DataDir (statfs(2) f_bavail × f_bsize), DiskTotalBytes
	// its size; both 0 with DiskErr set when statfs fails.
	DiskFreeBytes  uint64
	DiskTotalBytes uint64
	DiskErr        string
	// SegmentBytes is the partition and DLQ segment bytes (Broker.SegmentBytes);
	// SegmentLogsUnlisted the logs whose files are not listed yet, not included.
	SegmentBytes        int64
	SegmentLogsUnlisted int
	// CommitLogBytes is what the commit log holds since its last truncation
	// (a flush pass truncates it): the replay a restart would do.
	CommitLogBytes int64
	// FlushPasses counts the passes run since open (successful or not);
	// LastFlushAt is when the last one ended, LastFlushDuration how long it
	// took, LastFlushErr its error ("" for a success). Zero before the first.
	FlushPasses       uint64
	LastFlushAt       time.Time
	LastFlushDuration time.Duration
	LastFlushErr      string
	// SyncLatency is the cumulative fdatasync histogram (Stats.SyncLatency).
	SyncLatency LatencyHistogram
}

// Storage returns the StorageStatus. It walks the data directory, so it costs
// one stat per file: a read for an operator's view or a scrape, not a hot path.
func (b *Broker) Storage() StorageStatus {
	s := StorageStatus{DataDir: b.dir, SyncLatency: b.syncHist.snapshot()}
	s.DataBytes, s.DataFiles, s.DataErr = dirBytes(b.dir)
	var st unix.Statfs_t
	if err := unix.Statfs(b.dir, &st); err != nil {
		s.DiskErr = fmt.Sprintf("statfs %s: %v", b.dir, err)
	} else {
		s.DiskFreeBytes = st.Bavail * uint64(st.Bsize)
		s.DiskTotalBytes = st.Blocks * uint64(st.Bsize)
	}
	if b.enter() == nil {
		s.SegmentBytes, s.SegmentLogsUnlisted = b.SegmentBytes()
		s.CommitLogBytes = b.wal.RetainedBytes()
		b.leave()
	}
	b.flush.stateMu.Lock()
	s.FlushPasses = b.flush.passes
	if b.flush.passes > 0 {
		s.LastFlushAt = time.UnixMicro(b.flush.lastEnd)
		s.LastFlushDuration = time.Duration(b.flush.lastDur) * time.Microsecond
		if b.flush.err != nil {
			s.LastFlushErr = b.flush.err.Error()
		}
	}
	b.flush.stateMu.Unlock()
	return s
}

// dirBytes sums the sizes of the regular files under dir. A file removed
// while walked (retention, a flush pass's truncation) is skipped, not an
// error.
func dirBytes(dir string) (bytes, files int64, errText string) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		bytes += fi.Size()
		files++
		return nil
	})
	if err != nil {
		errText = fmt.Sprintf("walk %s: %v", dir, err)
	}
	return bytes, files, errText
}
