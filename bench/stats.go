package bench

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Op names a request kind in the latency report.
type Op string

const (
	OpPush Op = "push"
	OpPop  Op = "pop"
	OpAck  Op = "ack"
	// OpConfigure is Setup's POST /api/v1/configure (--retention-seconds); never timed.
	OpConfigure Op = "configure"
)

// Histogram bounds: 1 µs to 60 s at 3 significant digits (0.1 % resolution).
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histDigits    = 3
)

// Stats collects one run. Counters are atomic and always running (the coordinator diffs
// snapshots at the window's edges); histograms are per worker and merged when a worker ends, and
// only take samples while the measured window is open.
type Stats struct {
	pushed    atomic.Int64 // messages accepted by the server
	consumed  atomic.Int64 // messages delivered to consumers and acked
	delivered atomic.Int64 // messages delivered to consumers (before ack)
	requests  atomic.Int64
	lastMsgNs atomic.Int64 // wall time of the latest consumption, Unix ns

	measuring atomic.Bool
	// Counts of the measured window only, so rates agree with the histograms sample for sample.
	winPushed, winConsumed, winRequests atomic.Int64

	mu     sync.Mutex
	errors map[string]int64
	hists  map[string]*Histogram // Op names and "e2e"
}

// NewStats returns an empty collector.
func NewStats() *Stats {
	return &Stats{errors: map[string]int64{}, hists: map[string]*Histogram{}}
}

// Counters is a snapshot of the running totals.
type Counters struct {
	Pushed, Consumed, Delivered, Requests int64
	At                                    time.Time
}

// Snapshot reads the counters.
func (s *Stats) Snapshot() Counters {
	return Counters{Pushed: s.pushed.Load(), Consumed: s.consumed.Load(), Delivered: s.delivered.Load(),
		Requests: s.requests.Load(), At: time.Now()}
}

// Error counts one failure of the given kind (see ErrorKind).
func (s *Stats) Error(kind string, n int64) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.errors[kind] += n
	s.mu.Unlock()
}

// Errors returns a copy of the error counts by kind.
func (s *Stats) Errors() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.errors))
	for k, v := range s.errors {
		out[k] = v
	}
	return out
}

// ErrorTotal sums every kind.
func (s *Stats) ErrorTotal() int64 {
	var n int64
	for _, v := range s.Errors() {
		n += v
	}
	return n
}

// Hist returns the merged histogram of a name (an Op or "e2e"), nil when nothing was recorded.
func (s *Stats) Hist(name string) *Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hists[name]
}

// HistNames lists the recorded histograms, sorted.
func (s *Stats) HistNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.hists))
	for k := range s.hists {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Worker returns the single-goroutine recorder of one worker.
func (s *Stats) Worker() *WorkerStats {
	return &WorkerStats{s: s, hists: map[string]*Histogram{}}
}

// WorkerStats is one worker's view of Stats; not safe for concurrent use.
type WorkerStats struct {
	s     *Stats
	hists map[string]*Histogram
}

// record adds micros to histogram name while the window is open.
func (w *WorkerStats) record(name string, micros int64) {
	if w.s.measuring.Load() {
		w.recordAlways(name, micros)
	}
}

// recordAlways adds micros to histogram name; the caller has looked at the window.
func (w *WorkerStats) recordAlways(name string, micros int64) {
	h := w.hists[name]
	if h == nil {
		h = newHist()
		w.hists[name] = h
	}
	if micros < histMinMicros {
		micros = histMinMicros
	}
	if micros > histMaxMicros {
		micros = histMaxMicros
	}
	_ = h.RecordValue(micros) // in range by the clamps above
}

// Request records one request's latency d and counts the request.
func (w *WorkerStats) Request(op Op, d time.Duration) {
	w.s.requests.Add(1)
	if w.s.measuring.Load() {
		w.s.winRequests.Add(1)
	}
	w.record(string(op), d.Microseconds())
}

// EndToEnd records one message's latency from its (intended) send time in the all-groups
// "e2e" histogram and, when group is not "", in that group's too. Both or neither: the window
// is looked at once, so a message delivered as it closes is not in one and missing from the
// other (each group's count adds up to the total's).
func (w *WorkerStats) EndToEnd(group string, d time.Duration) {
	if !w.s.measuring.Load() {
		return
	}
	w.recordAlways("e2e", d.Microseconds())
	if group != "" {
		w.recordAlways(groupE2EPrefix+group, d.Microseconds())
	}
}

// groupE2EPrefix starts the histogram name of one consumer group's end-to-end latency.
const groupE2EPrefix = "e2e/"

// Pushed counts messages the server accepted.
func (w *WorkerStats) Pushed(n int) {
	w.s.pushed.Add(int64(n))
	if w.s.measuring.Load() {
		w.s.winPushed.Add(int64(n))
	}
}

// Delivered counts messages handed to a consumer.
func (w *WorkerStats) Delivered(n int) { w.s.delivered.Add(int64(n)) }

// Consumed counts messages delivered and acked, and stamps the time of the latest one.
func (w *WorkerStats) Consumed(n int) {
	w.s.consumed.Add(int64(n))
	if w.s.measuring.Load() {
		w.s.winConsumed.Add(int64(n))
		w.s.lastMsgNs.Store(time.Now().UnixNano())
	}
}

// Error counts a failure, classified by ErrorKind.
func (w *WorkerStats) Error(err error) { w.s.Error(ErrorKind(err), 1) }

// FailedItems counts items a 2xx answer reported as failed.
func (w *WorkerStats) FailedItems(op Op, n int) { w.s.Error(string(op)+"_failed_items", int64(n)) }

// Flush merges the worker's histograms into Stats; call once when the worker ends.
func (w *WorkerStats) Flush() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for name, h := range w.hists {
		if dst := w.s.hists[name]; dst != nil {
			dst.Merge(h)
		} else {
			w.s.hists[name] = h
		}
	}
	w.hists = map[string]*Histogram{}
}

// StatusError is a 2xx-less answer from an HTTP server.
type StatusError struct {
	Op     Op
	Status int
	Body   string // first bytes, for the log
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s: %v", e.Op, e.Status, e.Body, ErrHTTPStatus)
}

func (e *StatusError) Unwrap() error { return ErrHTTPStatus }

// ErrorKind buckets an error for the report: "http_<status>", "timeout", "connection",
// "bad_response" or "other".
func ErrorKind(err error) string {
	var se *StatusError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("http_%d", se.Status)
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, ErrBadResponse):
		return "bad_response"
	case errors.As(err, &ne), errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, fasthttp.ErrNoFreeConns):
		return "connection"
	default:
		return "other"
	}
}
