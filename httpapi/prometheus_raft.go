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
	series map[string]*bridged // by kind, key and labels as raft passed them (upsert)
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

// sampleFamily names a sample's family: a timing in seconds unless sampleScale says it has
// no unit.
func sampleFamily(key []string) (name, help string) {
	dotted := strings.Join(key, ".")
	if sampleScale(key) == 1 {
		return familyName(key), "hashicorp/raft's " + dotted + " (go-metrics sample: count and sum)."
	}
	return familyName(key) + "_seconds", "hashicorp/raft's " + dotted + " timing, in seconds (go-metrics sample: count and sum)."
}

// sampleScale is the factor from go-metrics' value of a sample to its family's unit: 1 for
// fsm.applyBatchNum (entries) and the *.saturation ratios, 1e-3 for the timings (ms).
func sampleScale(key []string) float64 {
	last := ""
	if len(key) > 0 {
		last = key[len(key)-1]
	}
	if last == "applyBatchNum" || strings.HasSuffix(last, "saturation") {
		return 1
	}
	return 1e-3
}

// upsert finds (or makes, naming it with name) the series of key and labels under g.mu and
// applies f to it. raft reports a few samples per committed entry, so the lookup allocates
// nothing once a series exists (issue 23, leader CPU per push request: building the family
// name, help and id strings on every call cost ~3 % of a leader's CPU): the id is the kind,
// key and labels as raft passed them, built in a pooled buffer, and name is called only for a
// new series.
func (g *goMetricsBridge) upsert(kind bridgedKind, key []string, labels []gometrics.Label,
	name func() (name, help string), f func(*bridged)) {
	if len(labels) > 1 && !sort.SliceIsSorted(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name }) {
		labels = append([]gometrics.Label(nil), labels...)
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
	}
	bp := bridgeIDs.Get().(*[]byte)
	id := append((*bp)[:0], byte(kind))
	for _, part := range key {
		id = append(append(id, part...), '.')
	}
	for _, l := range labels {
		id = append(append(append(append(id, '\xff'), l.Name...), '\xfe'), l.Value...)
	}
	g.mu.Lock()
	s := g.series[string(id)] // no allocation: the compiler looks the bytes up in place
	if s == nil {
		n, help := name()
		names := make([]string, len(labels))
		values := make([]string, len(labels))
		for i, l := range labels {
			names[i], values[i] = snake(l.Name), l.Value
		}
		s = &bridged{kind: kind, name: n, help: help, labelNames: names, labelValues: values}
		g.series[string(id)] = s
	}
	f(s)
	g.mu.Unlock()
	*bp = id
	bridgeIDs.Put(bp)
}

// bridgeIDs are upsert's id buffers.
var bridgeIDs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

func (g *goMetricsBridge) SetGauge(key []string, val float32) { g.SetGaugeWithLabels(key, val, nil) }

func (g *goMetricsBridge) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	v := float64(val)
	inMs := strings.HasSuffix(key[len(key)-1], "Duration") // fsm.lastRestoreDuration, in ms
	if inMs {
		v /= 1e3
	}
	g.upsert(bridgedGauge, key, labels, func() (string, string) {
		if inMs {
			return familyName(key) + "_seconds", "hashicorp/raft's " + strings.Join(key, ".") + " gauge, in seconds."
		}
		return familyName(key), "hashicorp/raft's " + strings.Join(key, ".") + " gauge."
	}, func(s *bridged) { s.value = v })
}

// EmitKey is go-metrics' one-off key/value (raft sends none); kept as a gauge.
func (g *goMetricsBridge) EmitKey(key []string, val float32) { g.SetGaugeWithLabels(key, val, nil) }

func (g *goMetricsBridge) IncrCounter(key []string, val float32) {
	g.IncrCounterWithLabels(key, val, nil)
}

func (g *goMetricsBridge) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	g.upsert(bridgedCounter, key, labels, func() (string, string) {
		return familyName(key) + "_total", "hashicorp/raft's " + strings.Join(key, ".") + " counter."
	}, func(s *bridged) { s.value += float64(val) })
}

func (g *goMetricsBridge) AddSample(key []string, val float32) { g.AddSampleWithLabels(key, val, nil) }

func (g *goMetricsBridge) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	scale := sampleScale(key)
	g.upsert(bridgedSummary, key, labels, func() (string, string) { return sampleFamily(key) }, func(s *bridged) {
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
