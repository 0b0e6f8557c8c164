package report

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/combmq/comb/broker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec 8.4: a partition's stats.deadLetter counts the DLQ entries of its
// messages; they add up to the queue's totals.deadLetter (issue 13 bug).
func TestResourceQueueDeadLetterPerPartition(t *testing.T) {
	e := newEnv(t)
	opts := broker.DefaultQueueOptions()
	opts.RetryLimit = 0
	_, err := e.b.Configure(broker.ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p1", "a", "b")
	e.push("q", "p2", "c")
	e.push("q", "p3", "d")
	for _, p := range []string{"p1", "p2"} {
		res := e.pop(broker.PopRequest{Queue: "q", Partition: p})
		e.ack(broker.QueueModeGroup, res, "failed")
	}
	counts := func() map[string]int64 {
		d, ok := e.r.ResourceQueue("q", PartitionPage{})
		require.True(t, ok)
		out := map[string]int64{"total": d.Messages.DeadLetter}
		for _, p := range d.PartitionList {
			out[p.Name] = p.Stats.DeadLetter
		}
		return out
	}
	assert.Equal(t, map[string]int64{"total": 3, "Default": 0, "p1": 2, "p2": 1, "p3": 0}, counts())
	res := e.pop(broker.PopRequest{Queue: "q", Partition: "p3"})
	e.ack(broker.QueueModeGroup, res, "failed")
	assert.Equal(t, map[string]int64{"total": 4, "Default": 0, "p1": 2, "p2": 1, "p3": 1}, counts(), "entries appended since the last ask")
	e.reopen()
	assert.Equal(t, map[string]int64{"total": 4, "Default": 0, "p1": 2, "p2": 1, "p3": 1}, counts(), "after a restart")
}

// comb_segment_bytes: the bytes of the partitions' segment files, as on disk
// (segments are appended whole, files are not preallocated).
func TestSegmentBytesMatchTheFiles(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "a", "b")
	e.push("q", "p2", "c")
	var onDisk int64
	require.NoError(t, filepath.WalkDir(filepath.Join(e.dir, "partitions"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".seg") {
			fi, _ := d.Info()
			onDisk += fi.Size()
		}
		return err
	}))
	got, unlisted := e.r.SegmentBytes()
	assert.Positive(t, onDisk)
	assert.Equal(t, onDisk, got)
	assert.Zero(t, unlisted)
}
