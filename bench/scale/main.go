// Command scale is issue 7's measurement over HTTP against a running comb
// serve: P partitions with one message each, pushed and then consumed by the
// queue-mode group, with the server's RSS and open descriptors read from
// /proc/<pid>, and the latency of wildcard pops once every partition is idle.
//
//	go run ./bench/scale --url http://127.0.0.1:6632 --pid $(pgrep -n comb) --partitions 100000
//
// docs/benchmarks.md ("Scale: 100,000 partitions") records the commands and
// results; bench/scale/run.sh drives the restarts.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:6632", "comb server")
	pid := flag.Int("pid", 0, "server process id (RSS, fds)")
	parts := flag.Int("partitions", 100000, "partitions, one message each")
	msgs := flag.Int("messages", 0, "messages in total (default = partitions)")
	conc := flag.Int("concurrency", 8, "parallel requests")
	queue := flag.String("queue", fmt.Sprintf("scale-%d", time.Now().UnixNano()%1e6), "queue name")
	latN := flag.Int("latency-pops", 2000, "wildcard pops timed once all partitions are idle")
	flag.Parse()
	n := *msgs
	if n == 0 {
		n = *parts
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc * 2}}
	report := func(phase string) {
		rss, fds := procStats(*pid)
		fmt.Printf("%-28s RSS %6.1f MB  fds %5d\n", phase, rss, fds)
	}
	report("start")

	// Push: requests of 100 items, each item to the next partition round robin.
	var next atomic.Int64
	start := time.Now()
	run(*conc, func() bool {
		i := int(next.Add(100)) - 100
		if i >= n {
			return false
		}
		var b strings.Builder
		b.WriteString(`{"items":[`)
		for j := i; j < min(i+100, n); j++ {
			if j > i {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"queue":%q,"partition":"p%d","payload":{"i":%d}}`, *queue, j%*parts, j)
		}
		b.WriteString(`]}`)
		st, _ := do(c, "POST", *url+"/api/v1/push", b.String())
		if st != 201 {
			fmt.Fprintln(os.Stderr, "push status", st)
			os.Exit(1)
		}
		return true
	})
	d := time.Since(start)
	fmt.Printf("push: %d messages to %d partitions in %.2f s = %.0f msg/s\n", n, *parts, d.Seconds(), float64(n)/d.Seconds())
	report("after push")

	// Pop: queue mode wildcard, batch 100 over up to 100 partitions, autoAck.
	var got atomic.Int64
	start = time.Now()
	run(*conc, func() bool {
		if got.Load() >= int64(n) {
			return false
		}
		st, body := do(c, "GET", *url+"/api/v1/pop/queue/"+*queue+"?batch=100&partitions=100&autoAck=true", "")
		if st == 204 {
			return got.Load() < int64(n) && time.Since(start) < 10*time.Minute
		}
		var r struct{ Messages []json.RawMessage }
		_ = json.Unmarshal(body, &r)
		got.Add(int64(len(r.Messages)))
		return true
	})
	d = time.Since(start)
	fmt.Printf("pop: %d messages in %.2f s = %.0f msg/s\n", got.Load(), d.Seconds(), float64(got.Load())/d.Seconds())
	report("after pop")

	// Latency with every partition idle: push one message to one of 10 hot
	// partitions, time the wildcard pop that takes it; then empty pops.
	var lat, empty []time.Duration
	for i := range *latN {
		body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"p%d","payload":1}]}`, *queue, i%10)
		if st, _ := do(c, "POST", *url+"/api/v1/push", body); st != 201 {
			fmt.Fprintln(os.Stderr, "push status", st)
			os.Exit(1)
		}
		t := time.Now()
		st, _ := do(c, "GET", *url+"/api/v1/pop/queue/"+*queue+"?batch=10&autoAck=true", "")
		lat = append(lat, time.Since(t))
		if st != 200 {
			fmt.Fprintln(os.Stderr, "pop status", st)
		}
		t = time.Now()
		do(c, "GET", *url+"/api/v1/pop/queue/"+*queue+"?batch=10&autoAck=true", "")
		empty = append(empty, time.Since(t))
	}
	fmt.Printf("wildcard pop with %d idle partitions: p50 %s p99 %s (empty pop p50 %s p99 %s)\n",
		*parts, pct(lat, 50), pct(lat, 99), pct(empty, 50), pct(empty, 99))
	report("end")
}

func run(conc int, step func() bool) {
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for step() {
			}
		}()
	}
	wg.Wait()
}

func do(c *http.Client, method, url, body string) (int, []byte) {
	req, _ := http.NewRequest(method, url, bytes.NewBufferString(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

// procStats returns the RSS (MB) and open descriptors of pid.
func procStats(pid int) (float64, int) {
	if pid == 0 {
		return 0, 0
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var rss float64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			rss = kb / 1024
		}
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	return rss, len(fds)
}
