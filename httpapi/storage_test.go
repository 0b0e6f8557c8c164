package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// GET /api/v1/storage carries broker.Storage's figures in bytes and milliseconds, the p99
// bucket's bound, and the failures in errors.
func TestStorageRouteShape(t *testing.T) {
	fake := newFake()
	fake.storage = report.StorageStatus{
		DataDir: "/var/lib/comb", DataBytes: 4096, DataFiles: 3, DiskFreeBytes: 1 << 30, DiskTotalBytes: 4 << 30,
		SegmentBytes: 2048, CommitLogBytes: 512, FlushPasses: 7,
		LastFlushAt: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC), LastFlushDuration: 1500 * time.Microsecond,
		LastFlushErr: "flush: sync logs: boom",
		SyncLatency:  broker.LatencyHistogram{BoundsMicros: []int64{100, 1000, 10000}, Counts: []uint64{90, 99, 100}, Count: 100, SumMicros: 25000},
	}
	ts := startServer(t, fake, Config{})
	res := ts.do("GET", "/api/v1/storage", "")
	require.Equal(t, 200, res.status, "%s", res.body)
	require.JSONEq(t, `{"dataDir":"/var/lib/comb","dataBytes":4096,"dataFiles":3,"diskFreeBytes":1073741824,"diskTotalBytes":4294967296,
		"segmentBytes":2048,"segmentLogsUnlisted":0,"commitLogBytes":512,
		"flush":{"passes":7,"lastAt":"2026-07-30T09:00:00.000Z","lastDurationMs":1.5,"lastError":"flush: sync logs: boom"},
		"fsync":{"count":100,"avgMs":0.25,"p99UpToMs":1},
		"errors":["flush: sync logs: boom"]}`, string(res.body))
}

// Before any pass or sync: lastAt and p99UpToMs are null, errors an empty list.
func TestStorageRouteBeforeAnyPass(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	res := ts.do("GET", "/api/v1/storage", "")
	require.Equal(t, 200, res.status)
	var got map[string]any
	require.NoError(t, json.Unmarshal(res.body, &got))
	require.Equal(t, map[string]any{"passes": 0.0, "lastAt": nil, "lastDurationMs": 0.0, "lastError": nil}, got["flush"])
	require.Equal(t, map[string]any{"count": 0.0, "avgMs": 0.0, "p99UpToMs": nil}, got["fsync"])
	require.Equal(t, []any{}, got["errors"])
}

// In a cluster a follower answers GET /api/v1/storage for its own disk, as it does /metrics:
// nothing reaches the leader.
func TestStorageRouteIsNodeLocal(t *testing.T) {
	leader := startFakeLeader(t)
	fake := newFake()
	fake.storage = report.StorageStatus{DataDir: "/follower", DataBytes: 9}
	ts := startServer(t, fake, Config{Cluster: &fakeCluster{self: "n2", id: "n1", addr: leader.addr}})
	res := ts.do("GET", "/api/v1/storage", "")
	require.Equal(t, 200, res.status, "%s", res.body)
	var got struct {
		DataDir   string `json:"dataDir"`
		DataBytes int64  `json:"dataBytes"`
	}
	require.NoError(t, json.Unmarshal(res.body, &got))
	require.Equal(t, "/follower", got.DataDir)
	require.Equal(t, int64(9), got.DataBytes)
	require.Empty(t, leader.requests())
}
