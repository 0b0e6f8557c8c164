package cursor

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/lsn"
)

func benchKeys(n int) []Key {
	keys := make([]Key, n)
	groups := []string{"billing", "analytics", "__QUEUE_MODE__", "audit"}
	for i := range keys {
		binary.BigEndian.PutUint64(keys[i].Partition[8:], uint64(i)*0x9E3779B97F4A7C15)
		keys[i].Partition[0] = 0x01
		keys[i].Group = groups[i%len(groups)]
	}
	return keys
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100]
}

// discardLog takes every checkpoint at once and keeps nothing: the engine's
// own cost, without a log's.
type discardLog struct{ next atomic.Uint64 }

func (l *discardLog) AppendCheckpoint([]byte) (lsn.Ticket, error) {
	return lsn.NewTicket(lsn.LSN(l.next.Add(1)), noWait{}), nil
}

// noWait is a Waiter whose entry is durable at once.
type noWait struct{}

func (noWait) Wait() error               { return nil }
func (*discardLog) Retryable(error) bool { return true }

// benchEngine opens an engine in a fresh directory whose checkpoints go to
// a real commit log on disk (fdatasync per group: SyncAlways), as the
// broker's will, or to discardLog with log == "discard".
func benchEngine(b *testing.B, log string) *Engine {
	dir := b.TempDir()
	var lg Log = &discardLog{}
	if log == "commitlog" {
		l, _, err := commitlog.Open(filepath.Join(dir, "commitlog"), commitlog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close() })
		lg = commitLog{l}
	}
	e, _, err := Open(filepath.Join(dir, "cursor"), Options{Log: lg})
	if err != nil {
		b.Fatal(err)
	}
	e.Start()
	b.Cleanup(func() { _ = e.Close() })
	return e
}

// runWorkers splits b.N operations over workers, each owning keys[w::workers]
// (per-key consistency is the caller's job, as in the broker), and reports
// ops/s and the p99 of Wait.
func runWorkers(b *testing.B, e *Engine, keys []Key, workers, perWait int, unit string, op func(k Key)) {
	var next atomic.Int64
	lats := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := w
			for next.Add(int64(perWait))-int64(perWait) < int64(b.N) {
				for range perWait {
					op(keys[i])
					i += workers
					if i >= len(keys) {
						i = w
					}
				}
				t0 := time.Now()
				if err := e.Wait(); err != nil {
					b.Error(err)
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), unit+"/s")
	b.ReportMetric(float64(p99(slices.Concat(lats...)).Microseconds())/1000, "p99-wait-ms")
}

// BenchmarkAcksThroughLog: acks (lease.ApplyAcks + Set) from 64 concurrent
// callers over 10,000 (partition, group) pairs, each caller waiting for
// durability after every `batch` acks (an HTTP ack batch), with the
// checkpoints going to the commit log (fdatasync on) or discarded.
func BenchmarkAcksThroughLog(b *testing.B) {
	for _, log := range []string{"commitlog", "discard"} {
		for _, batch := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("log=%s/callers=64/pairs=10000/batch=%d", log, batch), func(b *testing.B) {
				e := benchEngine(b, log)
				keys := benchKeys(10_000)
				for _, k := range keys {
					e.Set(k, lease.State{})
				}
				_ = e.Wait()
				runWorkers(b, e, keys, 64, batch, "acks", func(k Key) {
					s, _ := e.Get(k)
					_, changed, _ := lease.ApplyAcks(&s, []lease.Ack{{Offset: s.Committed + 1}}, 3, 0, false)
					if changed {
						e.Set(k, s)
					}
				})
			})
		}
	}
}

// BenchmarkClaimAckCycle: one op = claim (Grant + Set + Wait, as a pop) then
// ack of the whole span (ApplyAcks + Set + Wait), through the commit log.
func BenchmarkClaimAckCycle(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d/pairs=10000", callers), func(b *testing.B) {
			e := benchEngine(b, "commitlog")
			keys := benchKeys(10_000)
			now := time.Now().UnixMicro()
			runWorkers(b, e, keys, callers, 1, "cycles", func(k Key) {
				s, _ := e.Get(k)
				if !lease.CanClaim(s, now) {
					b.Error("leased")
				}
				id := [16]byte{0: 1}
				copy(id[1:], k.Partition[8:])
				lease.Grant(&s, id, "w", s.Committed+100, now+60_000_000)
				e.Set(k, s)
				if err := e.Wait(); err != nil {
					b.Error(err)
				}
				_, _, _ = lease.ApplyAcks(&s, []lease.Ack{{Offset: s.Lease.End, LeaseID: id, HasLeaseID: true}}, 3, now, false)
				e.Set(k, s)
			})
		})
	}
}

// BenchmarkIdleMemory measures heap bytes per idle (partition, group) pair:
// run with -benchtime=1000000x (b.N pairs).
func BenchmarkIdleMemory(b *testing.B) {
	e := benchEngine(b, "discard")
	keys := benchKeys(b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i, k := range keys {
		e.Set(k, lease.State{Committed: uint64(i + 1)})
	}
	_ = e.Wait()
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keys)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/pair")
}

// BenchmarkReplay: recovery's replay of 1,000,000 changes (10,000
// checkpoint bodies of 100 changes over 100,000 pairs) through
// ApplyCheckpoint, as the broker feeds them from the commit log.
func BenchmarkReplay(b *testing.B) {
	log := newMemLog(1, nil)
	e, _, err := Open(b.TempDir(), Options{Log: log, NoSync: true, CheckpointInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	e.Start()
	keys := benchKeys(100_000)
	for c := range 10_000 {
		for i := range 100 {
			k := keys[(c*100+i)%len(keys)]
			s, _ := e.Get(k)
			s.Committed++
			e.Set(k, s)
		}
		_ = e.Wait()
	}
	_ = e.Close()
	entries := log.crash(nil)
	var size int64
	for _, en := range entries {
		size += int64(len(en.Body))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e, _, err := Open(b.TempDir(), Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		for _, en := range entries {
			if err := e.ApplyCheckpoint(en.Body); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		_ = e.Close()
		b.StartTimer()
	}
	b.ReportMetric(1_000_000, "changes")
}

// BenchmarkSnapshot: one Snapshot of 1,000,000 (partition, group) cursors
// (one in 20 holding a lease) on the real disk, as the broker's flush pass
// takes one; reports the file's size and the time per snapshot, with the
// fsyncs (the default) and without (the encoding and writing alone). An idle
// engine: the one checkpoint per snapshot goes to discardLog.
func BenchmarkSnapshot(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=1000000/nosync=%v", noSync), func(b *testing.B) { benchSnapshot(b, noSync) })
	}
}

func benchSnapshot(b *testing.B, noSync bool) {
	dir := b.TempDir()
	e, _, err := Open(dir, Options{Log: &discardLog{}, NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	e.Start()
	defer e.Close()
	now := time.Now().UnixMicro()
	for i, k := range benchKeys(1_000_000) {
		s := lease.State{Committed: uint64(1000 + i%5000)}
		if i%20 == 0 {
			lease.Grant(&s, [16]byte{0: 1, 15: byte(i)}, "worker-1", s.Committed+10, now+30_000_000)
		}
		e.Set(k, s)
	}
	if err := e.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var from uint64
	for range b.N {
		if from, err = e.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := os.Stat(filepath.Join(dir, snapshotName(from)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportMetric(float64(st.Size()), "file-bytes")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/snapshot")
}
