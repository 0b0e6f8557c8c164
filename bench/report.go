package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Percentiles of a latency histogram, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

// PercentilesOf reads a microsecond histogram into milliseconds; the zero value for nil.
func PercentilesOf(h *Histogram) Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return Percentiles{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
	}
}

// Rate is n events over d, per second; 0 for an empty window.
func Rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Result is the report of one run. With --json it is printed as one JSON object on the last
// line of stdout.
type Result struct {
	Workload    Workload `json:"workload"`
	Driver      string   `json:"driver"`
	Variant     string   `json:"variant,omitempty"` // peer setting, e.g. "appendfsync always" (set by scripts)
	Target      string   `json:"target"`
	Queues      int      `json:"queues"`
	Partitions  int      `json:"partitions"`
	Batch       int      `json:"batch"`
	Size        int      `json:"size"`
	Concurrency int      `json:"concurrency"`
	Producers   int      `json:"producers,omitempty"`
	Groups      int      `json:"groups"`
	TargetRate  float64  `json:"targetRate,omitempty"`

	WindowSec float64 `json:"windowSec"` // measured window (shorter than --duration when a consume run drained its backlog)
	Drained   bool    `json:"drained,omitempty"`

	Messages      int64   `json:"messages"`  // the workload's main count: pushed (push), acked (consume), delivered (e2e, fanout, longpoll)
	MsgPerSec     float64 `json:"msgPerSec"` // Messages per second of the window
	MBPerSec      float64 `json:"mbPerSec"`  // MsgPerSec × payload size, 10^6 bytes
	PushMsgPerSec float64 `json:"pushMsgPerSec"`
	Requests      int64   `json:"requests"`

	// CommitsPerSec is cycles (cycle) or transactions (transaction) answered per second, each
	// committing one popped batch; StateOps the upserts of each cycle.
	CommitsPerSec float64 `json:"commitsPerSec,omitempty"`
	StateOps      int     `json:"stateOps,omitempty"`

	LatencyMs        Percentiles            `json:"latencyMs"`              // the main request kind (push for push; cycle or transaction for those; pop otherwise)
	RequestLatencyMs map[string]Percentiles `json:"requestLatencyMs"`       // by request kind
	E2ELatencyMs     *Percentiles           `json:"e2eLatencyMs,omitempty"` // from (intended) send to consumer
	// GroupE2ELatencyMs is the end-to-end latency of each consumer group of a fanout run ("g0",
	// "g1", ...), and WorstGroupE2EP99Ms the highest of their p99s: with --rate, the groups keep
	// up with the producers while it stays bounded (issue 23: each group's e2e p99 ≤ 100 ms).
	GroupE2ELatencyMs map[string]Percentiles `json:"groupE2eLatencyMs,omitempty"`
	// Intervals (--interval) slices the window; HoldRate is the last one's rate over the first's
	// and HoldCPU the same for server CPU per request (0 = fewer than two intervals).
	Intervals          []Interval `json:"intervals,omitempty"`
	HoldRate           float64    `json:"holdRate,omitempty"`
	HoldCPU            float64    `json:"holdCpu,omitempty"`
	WorstGroupE2EP99Ms float64    `json:"worstGroupE2eP99Ms,omitempty"`

	Errors      map[string]int64 `json:"errors"`
	ErrorsTotal int64            `json:"errorsTotal"`

	ServerPID          int   `json:"serverPid,omitempty"`
	ServerRssBytes     int64 `json:"serverRssBytes,omitempty"`     // at the end of the window
	ServerPeakRssBytes int64 `json:"serverPeakRssBytes,omitempty"` // VmHWM over the server's life
	// ServerAnonRssBytes and ServerFileRssBytes split ServerRssBytes at the end of the window
	// (ProcSample): the heap against mapped files' pages (the dedup run files).
	ServerAnonRssBytes int64   `json:"serverAnonRssBytes,omitempty"`
	ServerFileRssBytes int64   `json:"serverFileRssBytes,omitempty"`
	ServerCPUPercent   float64 `json:"serverCpuPercent,omitempty"` // 100 = one core busy
	// ServerCPUMicrosPerRequest is the server's CPU time over the window (user + system, all
	// threads, /proc/<pid>/stat, 10 ms ticks) divided by the requests completed in it: µs per
	// push request for push, per pop or ack request otherwise (issue 14's "CPU per
	// 100-message push request").
	ServerCPUMicrosPerRequest float64 `json:"serverCpuMicrosPerRequest,omitempty"`
	ClientCPUPercent          float64 `json:"clientCpuPercent"`
	// FollowerPIDs, FollowerCPUPercent and FollowerCPUMicrosPerRequest: a cluster's other
	// nodes (Config.FollowerPIDs), their CPU summed over the window (100 = one core) and that
	// per request of the window; the Server* figures are then the leader's alone.
	FollowerPIDs                []int   `json:"followerPids,omitempty"`
	FollowerCPUPercent          float64 `json:"followerCpuPercent,omitempty"`
	FollowerCPUMicrosPerRequest float64 `json:"followerCpuMicrosPerRequest,omitempty"`
	// ClusterNodes is the size of the cluster this run pushed through the leader of (0 = a
	// single node), and SingleNode the run of the same binary on one node in the same round
	// (`comb bench compare --cluster`), which ClusterRate and ClusterLeaderCPU divide by:
	// msg/s and the leader's CPU per request, each over the single node's.
	ClusterNodes     int     `json:"clusterNodes,omitempty"`
	SingleNode       *Result `json:"singleNode,omitempty"`
	ClusterRate      float64 `json:"clusterRate,omitempty"`
	ClusterLeaderCPU float64 `json:"clusterLeaderCpu,omitempty"`
	// HostCPUPercent is every core's busy time over the window (/proc/stat; 100 = one core):
	// with the server's and the client's taken away, what other processes used.
	HostCPUPercent float64  `json:"hostCpuPercent,omitempty"`
	LoadAvg        *LoadAvg `json:"loadAvg,omitempty"` // at the end of the window

	// ServerSyncs is how much SyncMetric (a counter of the server's /metrics/prometheus, by
	// default DefaultSyncMetric) grew over the window, and ServerSyncsPerRequest that over the
	// requests; both absent when the server does not expose it.
	SyncMetric            string   `json:"syncMetric,omitempty"`
	ServerSyncs           *int64   `json:"serverSyncs,omitempty"`
	ServerSyncsPerRequest *float64 `json:"serverSyncsPerRequest,omitempty"`

	Date string `json:"date"`
}

// WriteJSON prints r as one line.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteText prints a human summary.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s via %s (%s)%s\n", r.Workload, r.Driver, r.Target, variantSuffix(r.Variant))
	fmt.Fprintf(w, "  shape: %d queue(s) × %d partition(s), batch %d, %d B payloads, concurrency %d, groups %d",
		r.Queues, r.Partitions, r.Batch, r.Size, r.Concurrency, r.Groups)
	if r.TargetRate > 0 {
		fmt.Fprintf(w, ", open loop at %.0f msg/s", r.TargetRate)
	}
	fmt.Fprintf(w, "\n  window %.2fs%s: %d messages, %.0f msg/s, %.1f MB/s", r.WindowSec, drainedNote(r.Drained), r.Messages, r.MsgPerSec, r.MBPerSec)
	if r.Workload != WorkloadPush && r.PushMsgPerSec > 0 {
		fmt.Fprintf(w, " (pushes %.0f msg/s)", r.PushMsgPerSec)
	}
	fmt.Fprintln(w)
	switch r.Workload {
	case WorkloadCycle:
		fmt.Fprintf(w, "  %.0f cycles/s (each: %d state upserts, 1 sink push, the ack of one popped batch), p99 %.3f ms\n",
			r.CommitsPerSec, r.StateOps, r.LatencyMs.P99)
	case WorkloadTransaction:
		fmt.Fprintf(w, "  %.0f transactions/s (each: 1 sink push, the ack of one popped batch), p99 %.3f ms\n",
			r.CommitsPerSec, r.LatencyMs.P99)
	}
	names := make([]string, 0, len(r.RequestLatencyMs))
	for k := range r.RequestLatencyMs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		writePercentiles(w, k+" request", r.RequestLatencyMs[k])
	}
	if r.E2ELatencyMs != nil {
		writePercentiles(w, "end-to-end", *r.E2ELatencyMs)
	}
	groups := make([]string, 0, len(r.GroupE2ELatencyMs))
	for g := range r.GroupE2ELatencyMs {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		return len(groups[i]) < len(groups[j]) || len(groups[i]) == len(groups[j]) && groups[i] < groups[j]
	})
	for _, g := range groups {
		writePercentiles(w, "  e2e "+g, r.GroupE2ELatencyMs[g])
	}
	if len(groups) > 0 {
		fmt.Fprintf(w, "  worst group e2e p99 %.3f ms\n", r.WorstGroupE2EP99Ms)
	}
	for _, iv := range r.Intervals {
		fmt.Fprintf(w, "  interval %7.1fs +%.1fs: %.0f msg/s, server %.0f µs per request, RSS %.1f MB (anon %.1f, files %.1f)\n",
			iv.StartSec, iv.Sec, iv.MsgPerSec, iv.ServerCPUMicrosPerRequest, float64(iv.ServerRssBytes)/1e6,
			float64(iv.ServerAnonRssBytes)/1e6, float64(iv.ServerFileRssBytes)/1e6)
	}
	if len(r.Intervals) > 1 {
		fmt.Fprintf(w, "  last ÷ first interval: rate %.2f×, server CPU per request %.2f×\n", r.HoldRate, r.HoldCPU)
	}
	if r.ErrorsTotal == 0 {
		fmt.Fprintln(w, "  errors: none")
	} else {
		fmt.Fprintf(w, "  errors: %d %v\n", r.ErrorsTotal, r.Errors)
	}
	if r.ServerPID > 0 {
		fmt.Fprintf(w, "  server pid %d: RSS %.1f MB (anon %.1f, files %.1f; peak %.1f MB), CPU %.0f %% = %.0f µs per request\n", r.ServerPID,
			float64(r.ServerRssBytes)/1e6, float64(r.ServerAnonRssBytes)/1e6, float64(r.ServerFileRssBytes)/1e6,
			float64(r.ServerPeakRssBytes)/1e6, r.ServerCPUPercent, r.ServerCPUMicrosPerRequest)
	}
	if len(r.FollowerPIDs) > 0 {
		fmt.Fprintf(w, "  followers %v: CPU %.0f %% = %.0f µs per request (summed)\n", r.FollowerPIDs, r.FollowerCPUPercent, r.FollowerCPUMicrosPerRequest)
	}
	if r.ServerSyncs != nil {
		fmt.Fprintf(w, "  server syncs: %d (%s), %s per request\n", *r.ServerSyncs, r.SyncMetric, fmtOptional(r.ServerSyncsPerRequest, "%.3f"))
	}
	fmt.Fprintf(w, "  client CPU %.0f %%", r.ClientCPUPercent)
	if r.HostCPUPercent > 0 {
		fmt.Fprintf(w, ", host CPU %.0f %% (others %.0f %%)", r.HostCPUPercent, r.OthersCPUPercent())
	}
	if r.LoadAvg != nil {
		fmt.Fprintf(w, ", load average %.2f %.2f %.2f", r.LoadAvg.One, r.LoadAvg.Five, r.LoadAvg.Fifteen)
	}
	fmt.Fprintln(w)
}

// OthersCPUPercent is the host's busy CPU over the window that neither the server (when its
// process was found), a cluster's followers, nor this client used; 100 = one core. Never below 0: the three samples
// are taken microseconds apart and tick in 10 ms steps.
func (r *Result) OthersCPUPercent() float64 {
	return max(r.HostCPUPercent-r.ServerCPUPercent-r.FollowerCPUPercent-r.ClientCPUPercent, 0)
}

// fmtOptional formats *v, or "n/a" for nil.
func fmtOptional(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

func writePercentiles(w io.Writer, name string, p Percentiles) {
	fmt.Fprintf(w, "  %-14s ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (n=%d)\n",
		name, p.P50, p.P90, p.P99, p.P999, p.Max, p.Count)
}

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " [" + v + "]"
}

func drainedNote(d bool) string {
	if d {
		return " (backlog drained)"
	}
	return ""
}

// MarkdownTable renders results as the table of docs/benchmarks.md: one row per run, grouped
// by workload in the order of Workloads, with each row's ratio to comb's row of the same
// workload (comb ÷ peer for rates; peer ÷ comb would read backwards).
func MarkdownTable(results []Result) string {
	var sb strings.Builder
	sb.WriteString("| workload | server | msg/s | MB/s | comb ÷ this | req p50 / p99 ms | e2e p50 / p99 / p99.9 ms | errors | server RSS MB | server CPU % |\n")
	sb.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |\n")
	for _, wl := range Workloads {
		var comb *Result
		for i := range results {
			if results[i].Workload == wl && results[i].Driver == DriverComb {
				comb = &results[i]
				break
			}
		}
		for i := range results {
			r := &results[i]
			if r.Workload != wl {
				continue
			}
			ratio := "n/a"
			if comb != nil && r.MsgPerSec > 0 {
				ratio = fmt.Sprintf("%.2f×", comb.MsgPerSec/r.MsgPerSec)
			}
			e2e := "n/a"
			if r.E2ELatencyMs != nil {
				e2e = fmt.Sprintf("%.2f / %.2f / %.2f", r.E2ELatencyMs.P50, r.E2ELatencyMs.P99, r.E2ELatencyMs.P999)
			}
			rss, cpu := "n/a", "n/a"
			if r.ServerPID > 0 {
				rss = fmt.Sprintf("%.0f", float64(r.ServerRssBytes)/1e6)
				cpu = fmt.Sprintf("%.0f", r.ServerCPUPercent)
			}
			name := r.Driver
			if r.Variant != "" {
				name += " (" + r.Variant + ")"
			}
			rate := fmt.Sprintf("%.0f", r.MsgPerSec)
			if wl == WorkloadFanout || wl == WorkloadE2E {
				rate += fmt.Sprintf(" (push %.0f)", r.PushMsgPerSec)
			}
			if wl == WorkloadCycle || wl == WorkloadTransaction {
				rate += fmt.Sprintf(" (%.0f commits/s)", r.CommitsPerSec)
			}
			fmt.Fprintf(&sb, "| %s | %s | %s | %.1f | %s | %.2f / %.2f | %s | %d | %s | %s |\n",
				wl, name, rate, r.MBPerSec, ratio, r.LatencyMs.P50, r.LatencyMs.P99, e2e, r.ErrorsTotal, rss, cpu)
		}
	}
	return sb.String()
}
