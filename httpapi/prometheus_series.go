package httpapi

import (
	"sort"

	"github.com/combmq/comb/analytics"
)

// promSeries writes the per-queue families of spec 8.3 (Queen's names and
// labels) and comb's checkpoint latency, when the backend keeps them
// (statusBackend). The *_per_minute families are gauges of the newest closed
// minute (not counters: do not rate() them); a queue idle in that minute
// reads 0. Pop lag is in ms, stat="avg" or "max".
func (s *Server) promSeries(w *promWriter) {
	sb, ok := s.b.(statusBackend)
	if !ok {
		return
	}
	type row struct {
		queue string
		p     analytics.Point
	}
	var rows []row
	sb.LastMinute(func(queue string, p analytics.Point) { rows = append(rows, row{queue, p}) })
	sort.Slice(rows, func(i, j int) bool { return rows[i].queue < rows[j].queue }) // a stable exposition, scrape to scrape
	families := []struct {
		name, help string
		labels     func(q string) []string
		values     func(p analytics.Point) []float64
	}{
		{"queen_queue_push_messages_per_minute", "Messages pushed to this queue in the most recent closed minute.",
			one, func(p analytics.Point) []float64 { return []float64{float64(p.Ingested)} }},
		{"queen_queue_pop_messages_per_minute", "Messages popped from this queue in the most recent closed minute (consumer groups included).",
			one, func(p analytics.Point) []float64 { return []float64{float64(p.Popped)} }},
		{"queen_queue_ack_per_minute", "Acks of this queue in the most recent closed minute, by result (success: completed, failed: failed or dlq).",
			func(q string) []string {
				return []string{queueLabel(q) + `,result="success"`, queueLabel(q) + `,result="failed"`}
			},
			func(p analytics.Point) []float64 { return []float64{float64(p.Processed), float64(p.Errors)} }},
		{"queen_queue_pop_lag_milliseconds", "Age of the messages popped from this queue in the most recent closed minute, in ms, by stat.",
			func(q string) []string { return []string{queueLabel(q) + `,stat="avg"`, queueLabel(q) + `,stat="max"`} },
			func(p analytics.Point) []float64 { return []float64{round2(p.AvgLagMs()), float64(p.LagMaxMs)} }},
	}
	for _, f := range families {
		w.family(f.name, "gauge", f.help)
		for _, r := range rows {
			ls, vs := f.labels(r.queue), f.values(r.p)
			for i := range ls {
				w.sampleFloat(f.name, ls[i], vs[i])
			}
		}
	}

	var total int64
	w.family("queen_dlq_depth_by_queue", "gauge", "Messages in the dead-letter queue of each queue.")
	sb.DLQDepths(func(queue string, n int64) {
		total += n
		w.sampleFloat("queen_dlq_depth_by_queue", queueLabel(queue), float64(n))
	})
	w.family("queen_dlq_depth", "gauge", "Messages in every dead-letter queue.")
	w.sampleFloat("queen_dlq_depth", `scope="cluster"`, float64(total))

	segBytes, unlisted := sb.SegmentBytes()
	w.gauge("comb_segment_bytes", "Bytes of whole segments in the partition and DLQ logs that have listed their files since start (see comb_segment_logs_unlisted).", float64(segBytes))
	w.gauge("comb_segment_logs_unlisted", "Logs opened from the shutdown summary and not read since start: their bytes are not in comb_segment_bytes.", float64(unlisted))
	w.histogramMicros("comb_checkpoint_latency_seconds", "Cursor checkpoints from their commit-log append to durable, since start.", sb.CheckpointLatency())
}

func one(q string) []string { return []string{queueLabel(q)} }

// queueLabel is queue="<name>" with the text format's escapes: only \\, \"
// and \n are escaped there, every other byte goes through as is.
func queueLabel(q string) string {
	out := make([]byte, 0, len(q)+9)
	out = append(out, `queue="`...)
	for i := 0; i < len(q); i++ {
		switch c := q[i]; c {
		case '\\':
			out = append(out, `\\`...)
		case '"':
			out = append(out, `\"`...)
		case '\n':
			out = append(out, `\n`...)
		default:
			out = append(out, c)
		}
	}
	return string(append(out, '"'))
}
