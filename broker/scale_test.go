package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newScaleEnv is newEnv with the maintenance task driven by hand
// (e.b.maintain) and cfg edited by tune.
func newScaleEnv(t *testing.T, tune func(*Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
	cfg := func() Config {
		c := Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(),
			WakeTick: time.Millisecond, MaintenanceInterval: -1}
		if tune != nil {
			tune(&c)
		}
		return c
	}
	open := func() {
		b, err := Open(cfg())
		require.NoError(t, err)
		e.b = b
	}
	open()
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return e
}

func (e *env) reopenWith(tune func(*Config)) {
	e.t.Helper()
	if e.b != nil {
		require.NoError(e.t, e.b.Close())
	}
	c := Config{DataDir: e.dir, Sync: "never", Now: e.clk.Now, Logger: zerolog.Nop(),
		WakeTick: time.Millisecond, MaintenanceInterval: -1}
	if tune != nil {
		tune(&c)
	}
	b, err := Open(c)
	require.NoError(e.t, err)
	e.b = b
}

func (e *env) part(queue, partition string) *partition {
	return e.b.lookupQueue(queue).partition(partition)
}

func (e *env) configure(queue string, edit func(*QueueOptions)) {
	e.t.Helper()
	o := DefaultQueueOptions()
	edit(&o)
	_, err := e.b.Configure(ConfigureRequest{Queue: queue, Options: o})
	require.NoError(e.t, err)
}

func TestIdleEviction(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) { c.IdleEvict = 10 * time.Minute })
	for _, p := range []string{"a", "b", "c"} {
		e.push("q", p, p+"1")
	}
	e.b.maintain(e.clk.Now()) // first sight starts every partition's idle clock
	e.clk.Advance(9 * time.Minute)
	e.push("q", "a", "a2") // a is used within the window
	e.b.maintain(e.clk.Now())
	e.clk.Advance(2 * time.Minute)
	e.b.maintain(e.clk.Now())

	assert.True(t, e.part("q", "a").log.Loaded(), "a partition used since the last tick stays")
	assert.False(t, e.part("q", "b").log.Loaded(), "seed 004: idle for 10 minutes leaves memory")
	assert.False(t, e.part("q", "c").log.Loaded())
	assert.Equal(t, uint64(2), e.b.View().Counters().EvictedPartitions)

	dup := e.push("q", "b", "b1")
	assert.Equal(t, PushDuplicate, dup[0].Status, "an evicted partition still deduplicates")
	assert.True(t, e.part("q", "b").log.Loaded(), "its next message loads it again")
	res := e.pop(PopRequest{Queue: "q", Partition: "c", AutoAck: true})
	assert.Equal(t, []string{"c1"}, txids(res), "a pop loads an evicted partition")
}

func TestIdleEvictionDuringTraffic(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) { c.IdleEvict = time.Microsecond; c.MaxOpenFiles = 8 })
	const parts, per = 12, 30
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				_, err := e.b.Push([]PushItem{{Queue: "q", Partition: fmt.Sprint(i), TransactionID: fmt.Sprintf("%d-%d", i, j), Payload: []byte("1")}})
				assert.NoError(t, err)
			}
		}()
	}
	seen := make(map[string]int)
	var mu sync.Mutex
	wg.Add(1)
	go func() { // consumer
		defer wg.Done()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			res, err := e.b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 7, Partitions: 3})
			assert.NoError(t, err)
			var items []AckItem
			mu.Lock()
			for _, m := range res.Messages {
				seen[m.TransactionID]++
				items = append(items, AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: res.LeaseID})
			}
			n := len(seen)
			mu.Unlock()
			res.Release()
			if len(items) > 0 {
				out, err := e.b.Ack("", items)
				assert.NoError(t, err)
				for _, o := range out {
					assert.True(t, o.Success, o.Error)
				}
			}
			if n == parts*per {
				return
			}
		}
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the maintenance task, at full speed
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.clk.Advance(time.Millisecond)
			e.b.maintain(e.clk.Now())
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	require.Len(t, seen, parts*per)
	for tx, n := range seen {
		assert.Equal(t, 1, n, "delivered once: %s", tx)
	}
	st := e.b.View().Counters()
	assert.LessOrEqual(t, st.OpenFiles, st.MaxOpenFiles+5*3, "bounded by the cap plus the logs in use")
}

func TestMaxOpenFilesBoundsHandles(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) { c.MaxOpenFiles = 16; c.IdleEvict = -1 })
	const parts = 200
	items := make([]PushItem, parts)
	for i := range items {
		items[i] = PushItem{Queue: "q", Partition: fmt.Sprint(i), TransactionID: fmt.Sprint(i), Payload: []byte("1")}
	}
	_, err := e.b.Push(items)
	require.NoError(t, err)
	st := e.b.View().Counters()
	assert.Equal(t, 16, st.MaxOpenFiles)
	assert.LessOrEqual(t, st.OpenFiles, 16)
	assert.Greater(t, st.HandleReleases, uint64(0))
	got := 0
	for got < parts {
		res := e.pop(PopRequest{Queue: "q", Batch: 50, Partitions: 50, AutoAck: true})
		require.NotEmpty(t, res.Messages)
		got += len(res.Messages)
		assert.LessOrEqual(t, e.b.View().Counters().OpenFiles, 16)
	}
	assert.Equal(t, parts, got)
}

func TestCleanRestartReadsNoLog(t *testing.T) {
	e := newScaleEnv(t, nil)
	for i := range 5 {
		e.push("q", fmt.Sprint(i), fmt.Sprintf("m%d", i), fmt.Sprintf("n%d", i))
	}
	e.pop(PopRequest{Queue: "q", Partition: "0", Batch: 1, AutoAck: true})
	e.reopenWith(nil)
	_, err := os.Stat(filepath.Join(e.dir, "meta", cleanFileName))
	assert.ErrorIs(t, err, os.ErrNotExist, "Open consumes the marker before serving")
	for i := range 5 {
		p := e.part("q", fmt.Sprint(i))
		assert.False(t, p.log.Loaded(), "partition %d not opened at start-up", i)
		assert.Equal(t, uint64(3), p.visible.Load())
	}
	res := e.pop(PopRequest{Queue: "q", Batch: 100, Partitions: 5, AutoAck: true})
	assert.ElementsMatch(t, []string{"n0", "m1", "n1", "m2", "n2", "m3", "n3", "m4", "n4"}, txids(res))
	dup := e.push("q", "3", "m3")
	assert.Equal(t, PushDuplicate, dup[0].Status)
}

func TestCrashRestartVerifiesTails(t *testing.T) {
	e := newScaleEnv(t, nil)
	e.push("q", "p", "a", "b")
	e.push("q", "p", "c")
	dir := e.part("q", "p").log.Dir()
	require.NoError(t, e.b.Close())
	e.b = nil
	// A crash: no marker, and a torn segment at the tail.
	require.NoError(t, os.Remove(filepath.Join(e.dir, "meta", cleanFileName)))
	seg := filepath.Join(dir, "00000000000000000001.seg")
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("CMBS torn"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	e.reopenWith(nil)
	p := e.part("q", "p")
	assert.True(t, p.log.Loaded(), "after a crash the log is opened and its tail verified")
	assert.Equal(t, uint64(4), p.visible.Load())
	res := e.pop(PopRequest{Queue: "q", AutoAck: true})
	assert.Equal(t, []string{"a", "b", "c"}, txids(res))
}

func TestMaxSizeCounter(t *testing.T) {
	e := newScaleEnv(t, nil)
	e.configure("small", func(o *QueueOptions) { o.MaxSize = 3 })
	e.push("small", "x", "a")
	e.push("small", "y", "b", "c")
	res, err := e.b.Push([]PushItem{{Queue: "small", Partition: "x", TransactionID: "d"}})
	require.NoError(t, err)
	assert.Equal(t, "Queue 'small' would exceed max capacity (3). Current: 3, Batch: 1", res[0].Error)

	popped := e.pop(PopRequest{Queue: "small", Partition: "y"})
	e.ack("", popped, "completed")
	res, err = e.b.Push([]PushItem{{Queue: "small", Partition: "x", TransactionID: "d"}})
	require.NoError(t, err)
	assert.Equal(t, PushQueued, res[0].Status, "consumed messages no longer count")

	e.reopenWith(nil)
	assert.Equal(t, int64(2), e.b.lookupQueue("small").pendingQM.Load(), "rebuilt at Open")
	res, err = e.b.Push([]PushItem{{Queue: "small", TransactionID: "e"}, {Queue: "small", TransactionID: "f"}})
	require.NoError(t, err)
	assert.Equal(t, "Queue 'small' would exceed max capacity (3). Current: 2, Batch: 2", res[1].Error)
}

// Issue 23: a partition whose files the handle cache closed keeps its dedup index in memory;
// the idle eviction gives that back too, and the partition still answers duplicates.
func TestIdleEvictionDropsKeptDedupIndex(t *testing.T) {
	e := newScaleEnv(t, func(c *Config) { c.IdleEvict = 10 * time.Minute; c.MaxOpenFiles = 8 })
	parts := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, p := range parts {
		e.push("q", p, p+"1")
		e.push("q", p, p+"2") // a log with records loads its dedup index at the lookup
	}
	kept := 0
	for _, p := range parts {
		if l := e.part("q", p).log; !l.Loaded() && l.DedupLoaded() {
			kept++
		}
	}
	require.Greater(t, kept, 0, "the handle cache closed partitions' files and kept their dedup indexes")
	e.b.maintain(e.clk.Now())
	e.clk.Advance(11 * time.Minute)
	e.b.maintain(e.clk.Now())
	for _, p := range parts {
		assert.False(t, e.part("q", p).log.DedupLoaded(), "partition %s", p)
	}
	dup := e.push("q", "a", "a1")
	assert.Equal(t, PushDuplicate, dup[0].Status)
}
