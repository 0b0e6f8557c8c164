package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Comparison is the report of `comb bench compare`: what was compared, every run, and the
// ratios. With --json it is printed as one JSON object on the last line of stdout.
type Comparison struct {
	Workload  Workload `json:"workload"`
	Baseline  Binary   `json:"baseline"`
	Candidate Binary   `json:"candidate"`
	Serve     []string `json:"serve"`    // serve flags both sides got, besides --addr and --data-dir
	DataRoot  string   `json:"dataRoot"` // where each run's fresh data directory was made
	// SyncMetric is the server counter behind syncs/request ("" = not read).
	SyncMetric string        `json:"syncMetric,omitempty"`
	Rounds     int           `json:"rounds"` // asked for; Runs holds fewer when one failed
	Runs       []CompareRun  `json:"runs"`
	Ratios     []MetricRatio `json:"ratios"`
	Date       string        `json:"date"`
	Error      string        `json:"error,omitempty"` // why the comparison stopped before Rounds rounds

	// Cluster is the cluster size of a cluster comparison (BinaryCompare.Cluster; 0 = none).
	Cluster int `json:"cluster,omitempty"`
}

// Binary names a compared executable.
type Binary struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"` // of the file, to tell which build ran
}

// WriteJSON prints c as one line.
func (c *Comparison) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode comparison: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteHeader prints what is compared and the column heads of WriteRun's lines.
func (c *Comparison) WriteHeader(w io.Writer) {
	fmt.Fprintf(w, "comb bench compare: %s, %d rounds, baseline first in odd rounds, candidate first in even ones\n", c.Workload, c.Rounds)
	for _, b := range []struct {
		name string
		bin  Binary
	}{{"baseline", c.Baseline}, {"candidate", c.Candidate}} {
		fmt.Fprintf(w, "  %-9s  %s", b.name, b.bin.Path)
		if b.bin.SHA256 != "" {
			fmt.Fprintf(w, " (sha256 %.12s)", b.bin.SHA256)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  serve      %s, a fresh data directory under %s and a free loopback port per run\n", strings.Join(c.Serve, " "), c.DataRoot)
	if c.Cluster > 0 {
		fmt.Fprintf(w, "  cluster    each run: one node and a fresh %d-node cluster (peer TLS) of the same binary, pushed through its leader; srv CPU is the leader's\n", c.Cluster)
	}
	if c.SyncMetric != "" {
		fmt.Fprintf(w, "  syncs/req  growth of the server's %s over the window, per request\n", c.SyncMetric)
	}
	fmt.Fprintf(w, "%-5s %-9s %10s %8s %8s %8s %8s %7s %8s %9s %6s %7s %7s\n",
		"round", "side", "msg/s", "p50 ms", "p99 ms", "push p99", "e2e p99", "srv CPU", "µs/req", "syncs/req", "errors", "others", "load 1m")
}

// WriteRun prints one run as a line under WriteHeader's heads. srv CPU and others are % of
// one core; others is the host's busy CPU that neither server nor client used.
func WriteRun(w io.Writer, r CompareRun) {
	res := r.Result
	pushP99 := "-"
	if p, ok := res.RequestLatencyMs[string(OpPush)]; ok && p.Count > 0 {
		pushP99 = fmt.Sprintf("%.2f", p.P99)
	}
	e2eP99 := "-"
	if res.E2ELatencyMs != nil {
		e2eP99 = fmt.Sprintf("%.2f", res.E2ELatencyMs.P99)
	}
	cpu, perReq := "-", "-"
	if res.ServerPID > 0 {
		cpu = fmt.Sprintf("%.0f%%", res.ServerCPUPercent)
		perReq = fmt.Sprintf("%.0f", res.ServerCPUMicrosPerRequest)
	}
	others, load := "-", "-"
	if res.HostCPUPercent > 0 {
		others = fmt.Sprintf("%.0f%%", res.OthersCPUPercent())
	}
	if res.LoadAvg != nil {
		load = fmt.Sprintf("%.2f", res.LoadAvg.One)
	}
	fmt.Fprintf(w, "%-5d %-9s %10.0f %8.2f %8.2f %8s %8s %7s %8s %9s %6d %7s %7s\n",
		r.Round, r.Side, res.MsgPerSec, res.LatencyMs.P50, res.LatencyMs.P99, pushP99, e2eP99, cpu, perReq,
		fmtOptional(res.ServerSyncsPerRequest, "%.3f"), res.ErrorsTotal, others, load)
	if one := res.SingleNode; one != nil {
		oneLoad := "-"
		if one.LoadAvg != nil {
			oneLoad = fmt.Sprintf("%.2f", one.LoadAvg.One)
		}
		fmt.Fprintf(w, "      %d nodes: followers' CPU %.0f%% = %.0f µs/req; one node %.0f msg/s, %.0f µs/req (load %s); cluster ÷ one node: msg/s %.2f×, leader CPU %.2f×\n",
			res.ClusterNodes, res.FollowerCPUPercent, res.FollowerCPUMicrosPerRequest, one.MsgPerSec, one.ServerCPUMicrosPerRequest, oneLoad,
			res.ClusterRate, res.ClusterLeaderCPU)
	}
}

// WriteSummary prints the ratios: per metric the median of the per-round candidate ÷ baseline
// ratios with their min–max, the two sides' medians, and which way is better.
func (c *Comparison) WriteSummary(w io.Writer) {
	if len(c.Ratios) == 0 {
		fmt.Fprintln(w, "no complete round: no ratios")
		return
	}
	fmt.Fprintf(w, "candidate ÷ baseline, median of the rounds (min–max), medians baseline → candidate:\n")
	for _, m := range c.Ratios {
		better := "lower is better"
		if m.HigherIsBetter {
			better = "higher is better"
		}
		fmt.Fprintf(w, "  %-22s %6.2f×  (%.2f–%.2f, %d rounds)  %s → %s  %s\n",
			m.Metric, m.Median, m.Min, m.Max, len(m.Ratios), fmtFigure(m.Baseline), fmtFigure(m.Candidate), better)
	}
	if n := c.runsWithErrors(); n > 0 {
		fmt.Fprintf(w, "  %d run(s) had request errors: see the errors column\n", n)
	}
}

func (c *Comparison) runsWithErrors() int {
	n := 0
	for _, r := range c.Runs {
		if r.Result != nil && r.Result.ErrorsTotal > 0 {
			n++
		}
	}
	return n
}

// fmtFigure prints a rate without decimals and a small figure (latency, syncs) with enough to
// read it.
func fmtFigure(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
