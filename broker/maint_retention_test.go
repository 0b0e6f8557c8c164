package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/cursor"
)

// retentionEnv rotates a file per push (MaxSegmentFileSize 1), so retention
// by whole file can be checked offset by offset.
func retentionEnv(t *testing.T) *env {
	return newScaleEnv(t, func(c *Config) { c.MaxSegmentFileSize = 1; c.IdleEvict = -1 })
}

func TestRetentionRules(t *testing.T) {
	cases := []struct {
		name      string
		opts      func(*QueueOptions)
		consume   func(e *env) // before the clock moves
		wantFirst uint64       // low-water mark after one maintenance tick
		wantFiles uint64
	}{
		{
			name:      "retentionSeconds deletes old files consumed or not",
			opts:      func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 },
			wantFirst: 5, wantFiles: 4,
		},
		{
			name:      "retentionSeconds does nothing without retentionEnabled",
			opts:      func(o *QueueOptions) { o.RetentionSeconds = 60 },
			wantFirst: 1, wantFiles: 0,
		},
		{
			name: "completedRetentionSeconds stops at the slowest group",
			opts: func(o *QueueOptions) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 },
			consume: func(e *env) {
				e.pop(PopRequest{Queue: "q", Partition: "p", Group: "fast", Batch: 3, AutoAck: true})
				e.pop(PopRequest{Queue: "q", Partition: "p", Group: "slow", Batch: 1, AutoAck: true})
			},
			wantFirst: 2, wantFiles: 1,
		},
		{
			name:      "completedRetentionSeconds with no group deletes nothing",
			opts:      func(o *QueueOptions) { o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60 },
			wantFirst: 1, wantFiles: 0,
		},
		{
			name:      "maxWaitTimeSeconds applies without retentionEnabled",
			opts:      func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 },
			wantFirst: 5, wantFiles: 4,
		},
		{
			name: "a live lease is never cut",
			opts: func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds, o.LeaseTime = true, 60, 3600 },
			consume: func(e *env) {
				e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 1, AutoAck: true})
				e.pop(PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 2}) // leases offsets 2-3
			},
			wantFirst: 2, wantFiles: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := retentionEnv(t)
			e.configure("q", tc.opts)
			for i := range 4 {
				e.push("q", "p", fmt.Sprintf("m%d", i+1))
			}
			if tc.consume != nil {
				tc.consume(e)
			}
			e.clk.Advance(2 * time.Minute)
			e.push("q", "p", "m5") // the active file: never removed
			e.b.maintain(e.clk.Now())
			p := e.part("q", "p")
			assert.Equal(t, tc.wantFirst, p.log.FirstOffset())
			st := e.b.View().Counters()
			assert.Equal(t, tc.wantFiles, st.RetentionFilesDeleted)
			if tc.wantFiles > 0 {
				assert.Greater(t, st.RetentionBytesReclaimed, uint64(0))
			}
		})
	}
}

func TestRetentionMovesCursorsUp(t *testing.T) {
	e := retentionEnv(t)
	e.configure("q", func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	for i := range 4 {
		e.push("q", "p", fmt.Sprintf("m%d", i+1))
	}
	e.pop(PopRequest{Queue: "q", Batch: 1, AutoAck: true}) // queue mode cursor at 1
	e.clk.Advance(2 * time.Minute)
	e.push("q", "p", "m5")
	assert.Equal(t, int64(4), e.b.lookupQueue("q").pendingQM.Load())
	e.b.maintain(e.clk.Now())

	st, ok := e.b.cur.Get(cursor.Key{Partition: e.part("q", "p").id, Group: QueueModeGroup})
	require.True(t, ok)
	assert.Equal(t, uint64(4), st.Committed, "moved up to the new low-water mark")
	assert.Equal(t, uint64(1), e.b.View().Counters().RetentionCursorsMoved)
	assert.Equal(t, int64(1), e.b.lookupQueue("q").pendingQM.Load(), "maxSize depth follows")
	res := e.pop(PopRequest{Queue: "q", AutoAck: true})
	assert.Equal(t, []string{"m5"}, txids(res))
}

func TestRetentionDropsOldDLQFiles(t *testing.T) {
	e := retentionEnv(t)
	e.configure("q", func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds, o.RetryLimit = true, 60, 0 })
	fail := func(tx string) {
		e.push("q", "p", tx)
		res := e.pop(PopRequest{Queue: "q", Batch: 1})
		require.Equal(t, []string{tx}, txids(res))
		out := e.ack("", res, "failed")
		require.True(t, out[0].Success, out[0].Error)
	}
	fail("old1")
	fail("old2")
	e.clk.Advance(2 * time.Minute)
	fail("new")
	_, total, err := listDLQ(e.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	e.b.maintain(e.clk.Now())
	entries, total, err := listDLQ(e.b, dlqFilter{Queue: "q"})
	require.NoError(t, err)
	assert.Equal(t, 1, total, "DLQ entries older than the retention go with their messages")
	assert.Equal(t, "new", entries[0].TransactionID)
}

func TestRetentionTickIsBounded(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) { c.MaxSegmentFileSize = 1; c.IdleEvict = -1; c.MaintenanceBatch = 3 })
	e.configure("q", func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 })
	for i := range 6 {
		e.push("q", fmt.Sprint(i), "a")
		e.push("q", fmt.Sprint(i), "b")
	}
	e.clk.Advance(2 * time.Minute)
	for i := range 6 {
		e.push("q", fmt.Sprint(i), "c")
	}
	// 7 partitions (Configure made "Default"), 3 visited per tick.
	e.b.maintain(e.clk.Now())
	first := e.b.View().Counters().RetentionFilesDeleted
	assert.LessOrEqual(t, first, uint64(6), "one tick visits 3 partitions")
	assert.GreaterOrEqual(t, first, uint64(4))
	e.b.maintain(e.clk.Now())
	e.b.maintain(e.clk.Now())
	assert.Equal(t, uint64(12), e.b.View().Counters().RetentionFilesDeleted, "three ticks cover all 7")
}
