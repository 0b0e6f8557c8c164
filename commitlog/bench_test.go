package commitlog

import (
	"sync"
	"testing"

	"github.com/combmq/comb/vfs"
)

// BenchmarkGroupCommit: 16 appenders of 6 KB entries each waiting for
// durability, on the real disk (sync always): the shared fdatasyncs are the
// point (docs/benchmarks.md, "commit log").
func BenchmarkGroupCommit(b *testing.B) {
	l, _, err := Open(b.TempDir(), Options{FS: vfs.OS})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, 6000)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/16 + 1
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				tk, err := l.Append(1, payload)
				if err != nil {
					b.Error(err)
					return
				}
				if err := tk.Wait(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*16)/b.Elapsed().Seconds(), "appends/s")
}
