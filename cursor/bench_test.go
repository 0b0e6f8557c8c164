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

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
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

// BenchmarkAcksThroughJournal: acks (lease.ApplyAcks + Set) from 64
// concurrent callers over 10,000 (partition, group) pairs, each caller waiting
// for durability after every `batch` acks (an HTTP ack batch), sync on.
func BenchmarkAcksThroughJournal(b *testing.B) {
	for _, mode := range syscallModes {
		for _, batch := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/callers=64/pairs=10000/batch=%d", mode.name, batch), func(b *testing.B) {
				benchAcks(b, mode.fs, batch)
			})
		}
	}
}

func benchAcks(b *testing.B, fsys vfs.FS, batch int) {
	e, _, err := Open(b.TempDir(), Options{FS: fsys})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	keys := benchKeys(10_000)
	for _, k := range keys {
		e.Set(k, lease.State{})
	}
	_ = e.Wait()
	seq0 := e.j.nextSeq
	runWorkers(b, e, keys, 64, batch, "acks", func(k Key) {
		s, _ := e.Get(k)
		_, changed, _ := lease.ApplyAcks(&s, []lease.Ack{{Offset: s.Committed + 1}}, 3, 0, false)
		if changed {
			e.Set(k, s)
		}
	})
	b.ReportMetric(float64(b.N)/float64(max(1, e.j.nextSeq-seq0)), "acks/checkpoint")
}

// BenchmarkClaimAckCycle: one op = claim (Grant + Set + Wait, as a pop) then
// ack of the whole span (ApplyAcks + Set + Wait), sync on.
func BenchmarkClaimAckCycle(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d/pairs=10000", callers), func(b *testing.B) {
			e, _, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
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
	e, _, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
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

// BenchmarkRecovery: Open of a journal holding 1,000,000 changes after the
// last snapshot (10,000 checkpoints of 100 changes over 100,000 pairs).
func BenchmarkRecovery(b *testing.B) {
	dir := b.TempDir()
	e, _, err := Open(dir, Options{NoSync: true, SnapshotAfterBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
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
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, journalName(1)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e, rep, err := Open(dir, Options{NoSync: true, SnapshotAfterBytes: 1 << 40})
		if err != nil || rep.Checkpoints < 10_000 {
			b.Fatal(err, rep)
		}
		b.StopTimer()
		_ = e.Close()
		b.StartTimer()
	}
	b.ReportMetric(1_000_000, "changes")
}

// BenchmarkCheckpointSync: one caller, one Set + Wait per op (one small
// checkpoint: write + fdatasync), with the journal preallocated (the default)
// and without (every checkpoint grows the file, so ext4 commits the size
// change in its metadata journal at each fdatasync).
func BenchmarkCheckpointSync(b *testing.B) {
	for _, mode := range syscallModes {
		for _, pre := range []struct {
			name  string
			bytes int64
		}{{"prealloc=on", 0}, {"prealloc=off", -1}} {
			b.Run(mode.name+"/"+pre.name, func(b *testing.B) { benchCheckpointSync(b, mode.fs, pre.bytes) })
		}
	}
}

func benchCheckpointSync(b *testing.B, fsys vfs.FS, prealloc int64) {
	e, _, err := Open(b.TempDir(), Options{FS: fsys, PreallocBytes: prealloc})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	keys := benchKeys(1000)
	runWorkers(b, e, keys, 1, 1, "checkpoints", func(k Key) {
		s, _ := e.Get(k)
		s.Committed++
		e.Set(k, s)
	})
}
