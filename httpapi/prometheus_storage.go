package httpapi

// The data directory's families (broker.Storage, the figures GET /api/v1/storage answers):
// what the directory holds, the file system's room, the commit log's replay length and the
// flush pass. Storage walks the data directory: one stat per file per scrape.
var (
	mDataBytes      = desc("comb_data_directory_bytes", "Apparent size of every regular file under the data directory (segments, indexes, commit log, cursors, metadata).")
	mDataFiles      = desc("comb_data_directory_files", "Regular files under the data directory.")
	mDiskFree       = desc("comb_disk_free_bytes", "Bytes an unprivileged writer may still use on the file system holding the data directory (statfs f_bavail x f_bsize).")
	mDiskTotal      = desc("comb_disk_total_bytes", "Size of the file system holding the data directory.")
	mCommitLogBytes = desc("comb_commit_log_bytes", "Bytes the commit log holds since its last truncation by a flush pass: what a restart would replay.")
	mFlushPasses    = desc("comb_flush_passes_total", "Flush passes run since start (successful or not).")
	mFlushLastDur   = desc("comb_flush_pass_last_duration_seconds", "How long the last flush pass took.")
	mFlushLastEnd   = desc("comb_flush_pass_last_end_timestamp_seconds", "When the last flush pass ended, Unix time; 0 before the first.")
	mFlushFailing   = desc("comb_flush_pass_failing", "1 while the last flush pass failed (GET /api/v1/storage says why), else 0.")
	mStorageErrors  = desc("comb_storage_read_errors", "Figures of this scrape that could not be read (walk: the data directory's size; statfs: the free and total bytes), 1 each.", "what")
)

func (s *Server) collectStorage(e emitter) {
	st := s.rep.Storage()
	e.gauge(mDataBytes, float64(st.DataBytes))
	e.gauge(mDataFiles, float64(st.DataFiles))
	e.gauge(mDiskFree, float64(st.DiskFreeBytes))
	e.gauge(mDiskTotal, float64(st.DiskTotalBytes))
	e.gauge(mCommitLogBytes, float64(st.CommitLogBytes))
	e.counter(mFlushPasses, st.FlushPasses)
	var end float64
	if st.FlushPasses > 0 {
		end = float64(st.LastFlushAt.UnixMicro()) / 1e6
	}
	e.gauge(mFlushLastDur, st.LastFlushDuration.Seconds())
	e.gauge(mFlushLastEnd, end)
	e.gauge(mFlushFailing, boolGauge(st.LastFlushErr != ""))
	e.gauge(mStorageErrors, boolGauge(st.DataErr != ""), "walk")
	e.gauge(mStorageErrors, boolGauge(st.DiskErr != ""), "statfs")
}
