package httpapi

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// storageJSON is GET /api/v1/storage, comb's own read-only route (RO) for the dashboard's
// System view: the data directory's size, the file system's free and total bytes, the segment
// and commit-log bytes, the last flush pass and the fdatasync latencies (broker.Storage). Byte
// counts are bytes; durations are milliseconds; lastAt is ISO-8601 or null before the first
// pass. errors lists what could not be read (the walk of the data directory, statfs, the last
// flush pass's failure), so a zero is never silently a failure.
type storageJSON struct {
	DataDir             string       `json:"dataDir"`
	DataBytes           int64        `json:"dataBytes"`
	DataFiles           int64        `json:"dataFiles"`
	DiskFreeBytes       uint64       `json:"diskFreeBytes"`
	DiskTotalBytes      uint64       `json:"diskTotalBytes"`
	SegmentBytes        int64        `json:"segmentBytes"`
	SegmentLogsUnlisted int          `json:"segmentLogsUnlisted"`
	CommitLogBytes      int64        `json:"commitLogBytes"`
	Flush               storageFlush `json:"flush"`
	Fsync               storageSync  `json:"fsync"`
	Errors              []string     `json:"errors"`
}

type storageFlush struct {
	Passes         uint64   `json:"passes"`
	LastAt         *isoTime `json:"lastAt"`
	LastDurationMs float64  `json:"lastDurationMs"`
	LastError      *string  `json:"lastError"`
}

// storageSync summarises the cumulative fdatasync histogram: count and mean since start, and
// the upper bound of the bucket holding the 99th percentile (null when it is above the last
// bound, or there is no sync yet).
type storageSync struct {
	Count     uint64   `json:"count"`
	AvgMs     float64  `json:"avgMs"`
	P99UpToMs *float64 `json:"p99UpToMs"`
}

func (s *Server) storage(ctx *fasthttp.RequestCtx) {
	st := s.rep.Storage()
	out := storageJSON{
		DataDir: st.DataDir, DataBytes: st.DataBytes, DataFiles: st.DataFiles,
		DiskFreeBytes: st.DiskFreeBytes, DiskTotalBytes: st.DiskTotalBytes,
		SegmentBytes: st.SegmentBytes, SegmentLogsUnlisted: st.SegmentLogsUnlisted, CommitLogBytes: st.CommitLogBytes,
		Flush:  storageFlush{Passes: st.FlushPasses},
		Fsync:  syncSummary(st.SyncLatency),
		Errors: []string{},
	}
	if st.FlushPasses > 0 {
		at := isoTime(st.LastFlushAt)
		out.Flush.LastAt = &at
		out.Flush.LastDurationMs = round2(float64(st.LastFlushDuration) / float64(time.Millisecond))
	}
	for _, e := range []string{st.DataErr, st.DiskErr, st.LastFlushErr} {
		if e != "" {
			out.Errors = append(out.Errors, e)
		}
	}
	if st.LastFlushErr != "" {
		out.Flush.LastError = &st.LastFlushErr
	}
	s.sendValue(ctx, fasthttp.StatusOK, out)
}

func syncSummary(h broker.LatencyHistogram) storageSync {
	out := storageSync{Count: h.Count}
	if h.Count == 0 {
		return out
	}
	out.AvgMs = round2(float64(h.SumMicros) / float64(h.Count) / 1000)
	need := (h.Count*99 + 99) / 100 // ceil(0.99 × count)
	for i, n := range h.Counts {
		if n >= need {
			ms := float64(h.BoundsMicros[i]) / 1000
			out.P99UpToMs = &ms
			break
		}
	}
	return out
}
