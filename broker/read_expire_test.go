package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expiryEnv pushes old1, old2 (two segments), lets age pass, then pushes new
// unless age is 0; everything stays in the one active file (retention by
// whole file cannot help), and the maintenance task only runs when a test
// calls it.
func expiryEnv(t *testing.T, opts func(*QueueOptions), age time.Duration, pushNew bool) *env {
	e := newScaleEnv(t, func(c *Config) { c.IdleEvict = -1 })
	e.configure("q", opts)
	e.push("q", "p", "old1")
	e.push("q", "p", "old2")
	e.clk.Advance(age)
	if pushNew {
		e.push("q", "p", "new")
	}
	return e
}

// Spec 2.2 and Queen's JS retentionTest / retentionTestMaxTime: a message
// past retentionSeconds (with retentionEnabled) or maxWaitTimeSeconds (with
// or without it) is no longer delivered, by any kind of pop, although its
// segment file is still the active one.
func TestExpiredMessagesAreNotDelivered(t *testing.T) {
	retention := func(secs int64) func(*QueueOptions) {
		return func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, secs }
	}
	cases := []struct {
		name    string
		opts    func(*QueueOptions)
		age     time.Duration
		pushNew bool
		req     PopRequest
		want    []string
	}{
		{"retentionSeconds hides what is older", retention(60), 2 * time.Minute, true, PopRequest{Queue: "q"}, []string{"new"}},
		{"retentionSeconds alone does nothing without retentionEnabled", func(o *QueueOptions) { o.RetentionSeconds = 60 },
			2 * time.Minute, true, PopRequest{Queue: "q"}, []string{"old1", "old2", "new"}},
		{"maxWaitTimeSeconds applies without retentionEnabled", func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 },
			2 * time.Minute, true, PopRequest{Queue: "q"}, []string{"new"}},
		{"the shorter of the two horizons wins", func(o *QueueOptions) {
			o.RetentionEnabled, o.RetentionSeconds, o.MaxWaitTimeSeconds = true, 3600, 60
		}, 2 * time.Minute, true, PopRequest{Queue: "q"}, []string{"new"}},
		{"completedRetentionSeconds never hides an unconsumed message", func(o *QueueOptions) {
			o.RetentionEnabled, o.CompletedRetentionSeconds = true, 60
		}, 2 * time.Minute, true, PopRequest{Queue: "q"}, []string{"old1", "old2", "new"}},
		{"not yet past the horizon", retention(60), 30 * time.Second, true, PopRequest{Queue: "q"}, []string{"old1", "old2", "new"}},
		{"everything expired: an empty pop", retention(60), 2 * time.Minute, false, PopRequest{Queue: "q"}, nil},
		{"a named group", retention(60), 2 * time.Minute, true, PopRequest{Queue: "q", Group: "g"}, []string{"new"}},
		{"a targeted pop", retention(60), 2 * time.Minute, true, PopRequest{Queue: "q", Partition: "p", Group: "g"}, []string{"new"}},
		{"a pop with autoAck", retention(60), 2 * time.Minute, true, PopRequest{Queue: "q", AutoAck: true}, []string{"new"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := expiryEnv(t, tc.opts, tc.age, tc.pushNew)
			res := e.pop(tc.req)
			assert.Equal(t, tc.want, nilIfEmpty(txids(res)))
			assert.Equal(t, uint64(1), e.part("q", "p").log.FirstOffset(), "no file was removed: filtered at read time")
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// The claim moves the cursor past the expired messages, so the lease covers
// exactly what was delivered and acking it leaves nothing behind.
func TestExpiryMovesTheCursorPastWhatItSkips(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 2*time.Minute, true)
	res := e.pop(PopRequest{Queue: "q", Group: "g"})
	require.Equal(t, []string{"new"}, txids(res))
	st, ok := e.b.cur.Get(cursorKey(e, "q", "p", "g"))
	require.True(t, ok)
	assert.Equal(t, uint64(2), st.Committed, "cursor raised over old1, old2")
	assert.Equal(t, uint64(3), st.Lease.Start, "the lease starts at the first live message")
	out := e.ack("g", res, "completed")
	require.True(t, out[0].Success, out[0].Error)
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages)
}

// A span whose lease expired and whose messages then expired too is
// forgotten: the next delivery is a fresh one, not a retry.
func TestExpiredRedeliveryIsForgotten(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds, o.LeaseTime = 60, 10 }, 0, false)
	require.Equal(t, []string{"old1", "old2"}, txids(e.pop(PopRequest{Queue: "q"})))
	e.clk.Advance(2 * time.Minute) // lease and messages both expire
	e.push("q", "p", "new")
	res := e.pop(PopRequest{Queue: "q"})
	require.Equal(t, []string{"new"}, txids(res))
	st, _ := e.b.cur.Get(cursorKey(e, "q", "p", QueueModeGroup))
	assert.Equal(t, uint32(1), st.Lease.Attempts)
	assert.Equal(t, uint64(3), st.Lease.Start)
}

// A long-poll does not wake for or deliver an expired message.
func TestLongPollSkipsExpiredMessages(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 }, 2*time.Minute, false)
	res, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, Wait: true, Timeout: 20 * time.Millisecond})
	require.NoError(t, err)
	defer res.Release()
	assert.Empty(t, res.Messages)
}

// Queen's retention and eviction delete the rows: an expired message counts
// nowhere (not pending, not completed, not in the total), and maxSize does
// not count it either. The sweep finds them without any pop.
func TestExpiredMessagesCountNowhere(t *testing.T) {
	cases := []struct {
		name   string
		before func(e *env)
	}{
		{"found by a pop", func(e *env) { e.pop(PopRequest{Queue: "q", Partition: "p", Group: "other"}) }},
		{"found by the sweep", func(e *env) { e.b.maintain(e.clk.Now()) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 2*time.Minute, true)
			p := e.b.lookupQueue("q").partition("p")
			retained := func() uint64 { return p.visible.Load() - p.liveFrom() } // what the resources count (package report)
			require.Equal(t, uint64(3), retained(), "not found yet")
			tc.before(e)
			assert.Equal(t, uint64(1), retained())
			assert.Equal(t, int64(1), e.b.lookupQueue("q").pendingQM.Load(), "maxSize depth")
		})
	}
}

// The sweep leaves a released log alone unless even its newest message is
// expired (then no index is needed): it must not load idle partitions.
func TestSweepDoesNotLoadAReleasedLog(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 2*time.Minute, true)
	p := e.part("q", "p")
	require.True(t, p.log.Release())
	e.b.expirePartition(p, e.clk.Now().UnixMicro())
	assert.False(t, p.log.Loaded())
	assert.Equal(t, uint64(0), p.expiredBelow.Load(), "left for the next pop")

	e.clk.Advance(2 * time.Minute) // now "new" is expired too
	e.b.expirePartition(p, e.clk.Now().UnixMicro())
	assert.False(t, p.log.Loaded())
	assert.Equal(t, uint64(4), p.expiredBelow.Load(), "all visible messages")
}

// After a restart nothing about expiry was kept, and nothing needs to be:
// the first pop finds the expired messages again from their timestamps.
func TestExpiryIsFoundAgainAfterRestart(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 2*time.Minute, true)
	e.b.maintain(e.clk.Now())
	e.reopen()
	assert.Equal(t, uint64(0), e.part("q", "p").expiredBelow.Load())
	assert.Equal(t, []string{"new"}, txids(e.pop(PopRequest{Queue: "q"})))
}

// RETENTION_INTERVAL and EVICTION_INTERVAL (Queen's two services): a cycle
// applies a rule once its interval has passed since the last cycle that did.
func TestMaintenanceCycleRules(t *testing.T) {
	cfg := Config{RetentionInterval: 5 * time.Minute, EvictionInterval: time.Minute}
	var m maintenance
	t0 := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		want timeRules
	}{
		{0, timeRules{retention: true, eviction: true}},
		{30 * time.Second, timeRules{}},
		{61 * time.Second, timeRules{eviction: true}},
		{2 * time.Minute, timeRules{}},
		{2*time.Minute + time.Second, timeRules{eviction: true}},
		{4*time.Minute + 59*time.Second, timeRules{eviction: true}},
		{5 * time.Minute, timeRules{retention: true}},
		{6*time.Minute + time.Second, timeRules{eviction: true}},
	}
	for _, s := range steps {
		assert.Equal(t, s.want, m.dueRulesLocked(cfg, t0.Add(s.at).UnixMicro()), "at %v", s.at)
	}
}

// A cycle without the rule due does not apply it: whole-file retention of
// maxWaitTimeSeconds waits for EvictionInterval.
func TestRetentionWaitsForItsInterval(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) {
		c.MaxSegmentFileSize, c.IdleEvict, c.EvictionInterval = 1, -1, time.Hour
	})
	e.configure("q", func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 })
	e.b.maintain(e.clk.Now()) // the first cycle: every rule due, nothing to do
	e.push("q", "p", "a")
	e.push("q", "p", "b")
	e.clk.Advance(2 * time.Minute)
	e.push("q", "p", "c")
	e.b.maintain(e.clk.Now())
	assert.Equal(t, uint64(0), e.b.View().Counters().RetentionFilesDeleted, "eviction not due yet")
	e.clk.Advance(time.Hour)
	e.b.maintain(e.clk.Now())
	assert.Equal(t, uint64(2), e.b.View().Counters().RetentionFilesDeleted)
}

// When the time index cannot be read, the lookup answers the end of the log;
// the claim must then skip only what it saw expired and never hide a live
// message: with batch 1 it takes two pops to pass three expired messages.
func TestExpiryWhenTheTimeIndexFails(t *testing.T) {
	for _, tc := range []struct {
		batch int
		pops  [][]string
	}{
		{200, [][]string{{"new"}}},
		{1, [][]string{nil, {"new"}}},
	} {
		t.Run(fmt.Sprint("batch ", tc.batch), func(t *testing.T) {
			e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 0, false)
			e.push("q", "p", "old3")
			e.clk.Advance(2 * time.Minute)
			e.push("q", "p", "new")
			e.b.hooks.timeLookup = func(p *partition, _ int64) uint64 { return p.log.NextOffset() }
			for i, want := range tc.pops {
				res := e.pop(PopRequest{Queue: "q", Batch: tc.batch, AutoAck: true})
				assert.Equal(t, want, nilIfEmpty(txids(res)), "pop %d", i+1)
			}
		})
	}
}

// The messages list (spec 8.5) shows no expired message either, once a pop
// or the sweep found them: they are gone, as Queen's deleted rows.
func TestExpiredMessagesAreNotListed(t *testing.T) {
	e := expiryEnv(t, func(o *QueueOptions) { o.MaxWaitTimeSeconds = 60 }, 2*time.Minute, true)
	list := func() []string {
		out, err := listedTxids(e.b, "q")
		require.NoError(t, err)
		return out
	}
	require.ElementsMatch(t, []string{"old1", "old2", "new"}, list(), "not found yet")
	e.b.maintain(e.clk.Now())
	assert.Equal(t, []string{"new"}, list())
}
