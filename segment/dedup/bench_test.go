package dedup

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

// benchIndex indexes n ids (offsets 1..n, synthSource) in a directory on the real disk, with the
// production run size, as a partition that served n pushed messages does: loaded while empty,
// then appended to in pushes of 100 with seals and background merges on the way. It waits for
// the merges, so the runs are those a sustained push leaves (issue 23's shape: 10 M ids), and
// returns the CPU time all that took per 100 ids.
// Run files go through the page cache, so a page read is a pread.
func benchIndex(b *testing.B, n int) (*Index, *synthSource, float64) {
	b.Helper()
	src := &synthSource{first: 1, next: 1, maxRead: 128}
	dir := b.TempDir()
	x := &Index{}
	runEntries := benchRunEntries(b)
	x.Init(Config{FS: vfs.OS, Dir: dir, Source: src, FileMinRecords: DefaultFileMinRecords, RunEntries: runEntries})
	x.SetOpenNext(src.NextOffset())
	b.Cleanup(func() { _ = x.Drop() })
	if err := x.Find([]string{"load"}, nil, func(int, uint64, [16]byte) {}); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuNanos(b)
	for i := 0; i < n; i += 100 {
		appendTo(x, src, min(100, n-i))
		if i%runEntries < 100 {
			x.WaitMerges() // merges keep up with the seals, as at a push's pace
		}
	}
	x.WaitMerges()
	return x, src, float64(cpuNanos(b)-cpu0) / float64(n/100)
}

// benchRunEntries is the table size at which a seal makes a run: DefaultRunEntries, or
// COMB_BENCH_DEDUP_RUN_ENTRIES to weigh another (fewer seals and merges against a larger table).
func benchRunEntries(b *testing.B) int {
	s := os.Getenv("COMB_BENCH_DEDUP_RUN_ENTRIES")
	if s == "" {
		return DefaultRunEntries
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 100 {
		b.Fatal("COMB_BENCH_DEDUP_RUN_ENTRIES:", s)
	}
	return v
}

// benchSizes is the retained ids per partition the benchmarks index: 1 M and 10 M, or
// COMB_BENCH_DEDUP_IDS (comma-separated) to run others.
func benchSizes(b *testing.B) []int {
	sizes := []int{1_000_000, 10_000_000}
	if s := os.Getenv("COMB_BENCH_DEDUP_IDS"); s != "" {
		sizes = nil
		for _, f := range splitComma(s) {
			v, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal("COMB_BENCH_DEDUP_IDS:", s)
			}
			sizes = append(sizes, v)
		}
	}
	return sizes
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// BenchmarkFind100: one Find of 100 transaction ids (a push request's batch, hashes given as
// the broker gives them) in a partition holding n retained ids (issue 23's target: ≤ 10 µs per
// batch at 10 M ids, ≤ 1 B of memory per retained id):
//   - new: ids never stored, the common case: only the in-memory filters and what their
//     false positives read answer it;
//   - old: 100 ids stored long ago (random offsets): each found in a run page, then verified
//     by a read of the (synthetic, in-memory) source, so this measures the index's part.
//
// ns/op is per batch of 100, cpu-ns/op the process's CPU time (user and system) per batch:
// steadier than ns/op on a machine shared with other work; B/id is the index's memory (Stats.Bytes) per retained id; runs
// is how many sealed runs the partition holds; rewrites/id how many times the background
// merges wrote each id again while the n ids were pushed, and push-cpu-ns/100 the CPU the
// pushes cost the index per 100 ids (inserts, seals, merges, filter rebuilds: all but the
// lookups).
func BenchmarkFind100(b *testing.B) {
	for _, n := range benchSizes(b) {
		x, _, buildCPU := benchIndex(b, n)
		st := x.Stats()
		for _, kind := range []string{"new", "old"} {
			b.Run(fmt.Sprintf("%s/ids=%d", kind, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				const pool = 1 << 16 // batches cycle through pregenerated ids
				ids := make([]string, pool)
				hashes := make([]uint64, pool)
				for k := range ids {
					if kind == "new" {
						ids[k] = "new-" + strconv.Itoa(k)
					} else {
						ids[k] = txidAt(1 + uint64(rng.IntN(n-10_000)))
					}
					hashes[k] = index.HashTxn(ids[k])
				}
				want := 0
				if kind == "old" {
					want = 100
				}
				at := 0
				b.ReportAllocs()
				cpu0 := cpuNanos(b)
				for b.Loop() {
					found := 0
					if err := x.Find(ids[at:at+100], hashes[at:at+100], func(int, uint64, [16]byte) { found++ }); err != nil || found != want {
						b.Fatal(err, found)
					}
					at = (at + 100) % (pool - 100)
				}
				b.ReportMetric(float64(cpuNanos(b)-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(st.Bytes)/float64(n), "B/id")
				b.ReportMetric(float64(len(st.RunCounts)), "runs")
				b.ReportMetric(float64(st.MergedEntries)/float64(n), "rewrites/id")
				b.ReportMetric(buildCPU, "push-cpu-ns/100")
			})
		}
	}
}

// cpuNanos is the CPU time (user and system) the process has used.
func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
