package httpapi

import (
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/vfs"
)

// issue 21: a write the disk has no room for answers 507 with the reason; paths are cut to
// base names and the message starts "no space left on device" whatever error carries ENOSPC.
func TestNoSpaceIs507WithTheReason(t *testing.T) {
	fake := newFake()
	fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) {
		return nil, fmt.Errorf("cursor checkpoint failed (retrying): %w",
			&fs.PathError{Op: "write", Path: "/var/lib/comb/cursor/journal-7.log", Err: unix.EDQUOT})
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","transactionId":"t1","payload":1}]}`)
	requireJSON(t, r, 507, `{"error":"no space left on device: cursor checkpoint failed (retrying): write journal-7.log: disk quota exceeded"}`)
}

// /health says "degraded" with "diskFull" while writes fail for want of space, and lists
// nothing under "damaged".
func TestHealthIsDegradedWhileTheDiskIsFull(t *testing.T) {
	fake := newFake()
	fake.noSpace = &broker.NoSpaceState{SinceMicros: 1785402764881042,
		Reason: "no space left on device: queue q partition p: its segment file could not be written (write /data/partitions/x/00000000000000000001.seg: no space left on device); free disk space and retry, nothing was stored"}
	ts := startServer(t, fake, Config{Version: "1.2.3"})
	r := ts.do("GET", "/health", "")
	requireJSON(t, r, 200, `{"status":"degraded","database":"connected","server":"comb","worker_id":0,"version":"1.2.3",
	 "shared_state":{},"queen":{"worker_id":0,"status":"active"},
	 "reason":"disk full: no space left on device: queue q partition p: its segment file could not be written (write 00000000000000000001.seg: no space left on device); free disk space and retry, nothing was stored",
	 "diskFull":{"error":"no space left on device: queue q partition p: its segment file could not be written (write 00000000000000000001.seg: no space left on device); free disk space and retry, nothing was stored",
	  "since":"2026-07-30T09:12:44.881Z","action":"free disk space; writes resume by themselves, no restart needed"}}`)
}

// End to end on the real broker: a push to a new partition on a full disk answers 507 naming
// the partition's directory, /health is degraded with nothing damaged, and once space is
// freed the same push is queued (no restart) and /health is healthy.
func TestFullDiskNewPartitionOverHTTP(t *testing.T) {
	mem := vfs.NewMem()
	ts, _, _ := serveReal(t, broker.Config{DataDir: "/data", FS: mem, Logger: zerolog.Nop(),
		MaintenanceInterval: time.Hour, CommitLogFileBytes: 64 << 10})
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"old","transactionId":"a0","payload":1}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	// A read through the node under test returns once that node has applied the push (a
	// follower waits for its read barrier, docs/replication.md "Reads"): filling the disk
	// before a follower appended a0 would fail its apply, which is not what this test is about.
	require.Equal(t, 200, ts.do("GET", "/api/v1/resources/queues/q", "").status)

	mem.SetCapacity(mem.Used())
	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"new","transactionId":"b0","payload":1}]}`)
	require.Equal(t, 507, r.status, "%s", r.body)
	msg := r.json(t).(map[string]any)["error"].(string)
	assert.Contains(t, msg, "no space left on device: queue q partition new: its directory could not be written")
	assert.NotContains(t, msg, "/data", "paths are cut to base names")
	h := ts.do("GET", "/health", "").json(t).(map[string]any)
	assert.Nil(t, h["damaged"])
	if testTarget(t) != "follower" {
		// /health is a node-local read (docs/replication.md, "Reads"): through a follower the
		// push was refused by the leader's disk, and the follower, which wrote nothing, is healthy.
		assert.Equal(t, "degraded", h["status"])
		assert.NotNil(t, h["diskFull"])
	} else {
		assert.Equal(t, "healthy", h["status"])
	}

	mem.SetCapacity(0)
	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","partition":"new","transactionId":"b0","payload":1}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	assert.Equal(t, "queued", r.json(t).([]any)[0].(map[string]any)["status"])
	h = ts.do("GET", "/health", "").json(t).(map[string]any)
	assert.Equal(t, "healthy", h["status"])
	assert.Nil(t, h["damaged"])
}
