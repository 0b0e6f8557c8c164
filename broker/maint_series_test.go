package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/analytics"
)

// series reads the per-minute store as package report does, for queue ("" =
// all queues).
func (e *env) series(iv analytics.Interval, from, to time.Time, queue string) []analytics.Bucket {
	q := analytics.Query{Interval: iv, From: from, To: to}
	if queue != "" {
		q.Match = func(_ [16]byte, name string) bool { return name == queue }
	}
	return e.b.View().Series().Series(q)
}

// minute is the current minute's point of queue ("" = all queues).
func (e *env) minute(queue string) analytics.Point {
	e.t.Helper()
	now := e.clk.Now()
	got := e.series(analytics.Minute, now, now, queue)
	require.Len(e.t, got, 1)
	return got[0].Point
}

// spec 8.7: the per-minute series count pushes, pops (with their lag), acks
// completed and failed, in the minute they happen; a restart keeps them; the
// next minute starts at zero and the hour holds both.
func TestSeriesCountPushPopAckAndSurviveRestart(t *testing.T) {
	e := newEnv(t)
	opts := DefaultQueueOptions()
	opts.RetryLimit = 0
	_, err := e.b.Configure(ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p1", "a", "b", "c") // at T
	e.push("q", "p2", "d", "e")      // at T+1ms
	e.clk.Advance(2 * time.Second)   // now T+2.002s
	res := e.pop(PopRequest{Queue: "q", Partition: "p1", Batch: 3})
	require.Len(t, res.Messages, 3)
	e.ack(QueueModeGroup, res, "completed", "a", "b")
	e.ack(QueueModeGroup, res, "failed", "c") // retryLimit 0: dead-lettered

	want := analytics.Point{Ingested: 5, Popped: 3, Processed: 2, Errors: 1, LagSumMs: 3 * 2002, LagMaxMs: 2002, DeadLettered: 1}
	assert.Equal(t, want, e.minute(""), "all queues")
	assert.Equal(t, want, e.minute("q"), "queue q")
	assert.Equal(t, analytics.Point{}, e.minute("other"), "another queue")

	e.reopen()
	assert.Equal(t, want, e.minute("q"), "after a restart")

	start := e.clk.Now()
	e.clk.Advance(time.Minute)
	e.b.maintain(e.clk.Now()) // closes the minute, saves the file
	e.push("q", "p2", "f")
	got := e.series(analytics.Minute, start, e.clk.Now(), "q")
	require.Len(t, got, 2)
	assert.Equal(t, want, got[0].Point)
	assert.Equal(t, analytics.Point{Ingested: 1}, got[1].Point)
	hour := e.series(analytics.Hour, start, start, "")
	want.Ingested++
	assert.Equal(t, want, hour[0].Point, "the hour sums its minutes")

	e.b.View().Series().LastMinute(func(_ [16]byte, queue string, p analytics.Point) {
		assert.Equal(t, "q", queue)
		assert.Equal(t, uint64(5), p.Ingested, "the newest closed minute")
	})

	_, err = e.b.DeleteQueue("q")
	require.NoError(t, err)
	assert.Equal(t, analytics.Point{}, e.minute("q"), "a deleted queue has no series")
}

// Config.NoAnalytics: nothing is counted, the series answer zeros.
func TestSeriesOff(t *testing.T) {
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
	b, err := Open(Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, NoAnalytics: true})
	require.NoError(t, err)
	e.b = b
	t.Cleanup(func() { b.Close() })
	e.push("q", "p", "a")
	assert.Equal(t, analytics.Point{}, e.minute(""))
}

// A committed transaction counts its pushes (not duplicates) and acks; an
// aborted one counts nothing.
func TestSeriesCountTransactions(t *testing.T) {
	e := newEnv(t)
	e.push("in", "", "a", "b")
	res := e.pop(PopRequest{Queue: "in", Group: "g"})
	tx, err := e.b.Transaction([]TxOp{txAck("g", res.Messages[0], res.LeaseID, "completed"), txPush("out", "o1"), txPush("out", "o1")})
	require.NoError(t, err)
	require.True(t, tx.Success, tx.Error)
	abort, err := e.b.Transaction([]TxOp{txPush("out", "o2"), txAck("g", Message{TransactionID: "nope", PartitionID: res.PartitionID}, res.LeaseID, "completed")})
	require.NoError(t, err)
	require.False(t, abort.Success)
	assert.Equal(t, analytics.Point{Ingested: 2, Popped: 2, Processed: 1, LagSumMs: 2, LagMaxMs: 1}, e.minute("in"), "popped 1 ms after the push")
	assert.Equal(t, analytics.Point{Ingested: 1}, e.minute("out"))
}

// A damaged meta/analytics does not stop the broker: it starts with blank
// series (a chart cache, nothing acknowledged depends on it).
func TestDamagedSeriesFileStartsBlank(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	require.NoError(t, e.b.Close())
	e.b = nil
	path := filepath.Join(e.dir, "meta", seriesFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-1] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
	e.open()
	assert.Equal(t, analytics.Point{}, e.minute("q"))
	e.push("q", "p", "b")
	assert.Equal(t, analytics.Point{Ingested: 1}, e.minute("q"), "counting goes on")
}
