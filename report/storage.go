package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/combmq/comb/broker"
	"golang.org/x/sys/unix"
)

// StorageStatus is what the data directory holds and how its writes fare, for
// the dashboard's System view (GET /api/v1/storage) and any gauge that wants
// the same figures (Prometheus data-directory and free bytes).
type StorageStatus struct {
	DataDir string
	// DataBytes is the apparent size of every regular file under DataDir
	// (segments, indexes, commit log, cursors, metadata), from one walk of the
	// tree at most DataWalkMaxAge old; DataFiles counts them. DataErr is why the walk stopped short
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
	// SegmentBytes is the partition and DLQ segment bytes (Reports.SegmentBytes);
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
	SyncLatency broker.LatencyHistogram
}

// Storage returns the StorageStatus. Its DataBytes, DataFiles and DataErr
// come from a walk of the data directory at most DataWalkMaxAge old
// (storagewalk.go): the walk costs one stat per file, and scrapes and the
// dashboard may ask every second.
func (rs *Reports) Storage() StorageStatus {
	dir := rs.v.Dir()
	s := StorageStatus{DataDir: dir, SyncLatency: rs.v.SyncLatency()}
	s.DataBytes, s.DataFiles, s.DataErr = rs.dataWalk.get(dir, rs.v.Now())
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		s.DiskErr = fmt.Sprintf("statfs %s: %v", dir, err)
	} else {
		s.DiskFreeBytes = st.Bavail * uint64(st.Bsize)
		s.DiskTotalBytes = st.Blocks * uint64(st.Bsize)
	}
	if rs.v.Enter() == nil {
		s.SegmentBytes, s.SegmentLogsUnlisted = rs.SegmentBytes()
		s.CommitLogBytes = rs.v.CommitLogBytes()
		rs.v.Leave()
	}
	f := rs.v.FlushStatus()
	s.FlushPasses = f.Passes
	if f.Passes > 0 {
		s.LastFlushAt = time.UnixMicro(f.LastEndMicros)
		s.LastFlushDuration = time.Duration(f.LastDurationMicros) * time.Microsecond
		s.LastFlushErr = f.LastErr
	}
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
