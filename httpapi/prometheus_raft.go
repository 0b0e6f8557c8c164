package httpapi

import (
	"sort"
	"strings"
	"sync"
	"unicode"

	gometrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// raft's own metrics (hashicorp/raft reports through hashicorp/go-metrics' process-wide
// sink, a black hole unless one is installed) reach /metrics/prometheus through raftBridge: a
// go-metrics sink that keeps the last gauge values, counter sums and sample count and sum, and a
// prometheus.Collector that exposes them at scrape time.
//
// Names: raft's dotted, camelCase keys in snake_case under comb_, e.g. raft.commitTime →
// comb_raft_commit_time_seconds. go-metrics samples carry no unit; raft's are timings in ms
// (MeasureSince) but for fsm.applyBatchNum (entries per batch) and the *.saturation ratios,
// so every other sample is a summary in seconds. Counters get _total. A single node runs no
// raft and shows none of these. The sink is process-wide: an in-process test cluster sums its
// nodes here.
var (
	raftBridgeOnce sync.Once
	raftBridge     = &goMetricsBridge{series: map[string]*bridged{}}
)

// raftMetrics installs the bridge as go-metrics' global sink, once per process, and returns it.
func raftMetrics() prometheus.Collector {
	raftBridgeOnce.Do(func() {
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = false // client_golang's Go collector has these
		cfg.AllowedPrefixes = []string{"raft"}
		cfg.FilterDefault = false                   // raft's keys only
		_, _ = gometrics.NewGlobal(cfg, raftBridge) // New fails only on a bad filter
	})
	return raftBridge
}

type bridgedKind int

const (
	bridgedGauge bridgedKind = iota
	bridgedCounter
	bridgedSummary
)

// bridged is one series: a family name, its label names and values, and its value (gauge),
// sum (counter) or count and sum (summary, already in the family's unit).
type bridged struct {
	kind        bridgedKind
	name, help  string
	labelNames  []string
	labelValues []string
	value       float64
	count       uint64
}

// goMetricsBridge implements gometrics.MetricSink and prometheus.Collector.
type goMetricsBridge struct {
	mu     sync.Mutex
	series map[string]*bridged // by name and labels
}

var _ gometrics.MetricSink = (*goMetricsBridge)(nil)

// familyName is comb_ and key's parts in snake_case, joined by _.
func familyName(key []string) string {
	var b strings.Builder
	b.WriteString("comb")
	for _, part := range key {
		b.WriteByte('_')
		b.WriteString(snake(part))
	}
	return b.String()
}

// snake turns a camelCase key part into snake_case and any byte Prometheus forbids in a name
// into _ (raft's parts are ASCII; a peer id in a legacy key would be too).
func snake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r <= unicode.MaxASCII && unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case r <= unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	return b.String()
}

// sampleFamily names a sample's family and the factor from go-metrics' value to its unit.
func sampleFamily(key []string) (name, help string, scale float64) {
	last := ""
	if len(key) > 0 {
		last = key[len(key)-1]
	}
	dotted := strings.Join(key, ".")
	switch {
	case last == "applyBatchNum" || strings.HasSuffix(last, "saturation"):
		return familyName(key), "hashicorp/raft's " + dotted + " (go-metrics sample: count and sum).", 1
	default:
		return familyName(key) + "_seconds", "hashicorp/raft's " + dotted + " timing, in seconds (go-metrics sample: count and sum).", 1e-3
	}
}

func (g *goMetricsBridge) upsert(kind bridgedKind, name, help string, labels []gometrics.Label, f func(*bridged)) {
	ls := append([]gometrics.Label(nil), labels...)
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	id := name
	names := make([]string, len(ls))
	values := make([]string, len(ls))
	for i, l := range ls {
		names[i], values[i] = snake(l.Name), l.Value
		id += "\xff" + names[i] + "\xfe" + l.Value
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.series[id]
	if s == nil {
		s = &bridged{kind: kind, name: name, help: help, labelNames: names, labelValues: values}
		g.series[id] = s
	}
	f(s)
}

func (g *goMetricsBridge) SetGauge(key []string, val float32) { g.SetGaugeWithLabels(key, val, nil) }

func (g *goMetricsBridge) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	name, help, v := familyName(key), "hashicorp/raft's "+strings.Join(key, ".")+" gauge.", float64(val)
	if last := key[len(key)-1]; strings.HasSuffix(last, "Duration") { // fsm.lastRestoreDuration, in ms
		name, help, v = name+"_seconds", "hashicorp/raft's "+strings.Join(key, ".")+" gauge, in seconds.", v/1e3
	}
	g.upsert(bridgedGauge, name, help, labels, func(s *bridged) { s.value = v })
}

// EmitKey is go-metrics' one-off key/value (raft sends none); kept as a gauge.
func (g *goMetricsBridge) EmitKey(key []string, val float32) { g.SetGaugeWithLabels(key, val, nil) }

func (g *goMetricsBridge) IncrCounter(key []string, val float32) {
	g.IncrCounterWithLabels(key, val, nil)
}

func (g *goMetricsBridge) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	help := "hashicorp/raft's " + strings.Join(key, ".") + " counter."
	g.upsert(bridgedCounter, familyName(key)+"_total", help, labels, func(s *bridged) { s.value += float64(val) })
}

func (g *goMetricsBridge) AddSample(key []string, val float32) { g.AddSampleWithLabels(key, val, nil) }

func (g *goMetricsBridge) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	name, help, scale := sampleFamily(key)
	g.upsert(bridgedSummary, name, help, labels, func(s *bridged) {
		s.count++
		s.value += float64(val) * scale
	})
}

func (*goMetricsBridge) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series seen. A family met with two label sets (raft does not do that)
// would make the registry drop it from that scrape with an error, not fail the others.
func (g *goMetricsBridge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.series {
		d := prometheus.NewDesc(s.name, s.help, s.labelNames, nil)
		switch s.kind {
		case bridgedGauge:
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, s.value, s.labelValues...)
		case bridgedCounter:
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, s.value, s.labelValues...)
		case bridgedSummary:
			ch <- prometheus.MustNewConstSummary(d, s.count, s.value, nil, s.labelValues...)
		}
	}
}

// gmLabel is go-metrics' label, named for the tests.
type gmLabel = gometrics.Label
