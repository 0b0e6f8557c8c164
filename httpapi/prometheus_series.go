package httpapi

import (
	"sort"

	"github.com/combmq/comb/analytics"
)

// Per-queue families of spec 8.3 (Queen's names and labels). The *_per_minute families are
// gauges of the newest closed minute (not counters: do not rate() them); a queue idle in that
// minute reads 0. queen_queue_pop_lag_milliseconds is Queen's name, kept for its dashboards
// although Prometheus's convention is seconds: queen_queue_pop_lag_seconds is its twin.
var (
	mQueuePush   = desc("queen_queue_push_messages_per_minute", "Messages pushed to this queue in the most recent closed minute.", "queue")
	mQueuePop    = desc("queen_queue_pop_messages_per_minute", "Messages popped from this queue in the most recent closed minute (consumer groups included).", "queue")
	mQueueAck    = desc("queen_queue_ack_per_minute", "Acks of this queue in the most recent closed minute, by result (success: completed, failed: failed or dlq).", "queue", "result")
	mQueueLagMs  = desc("queen_queue_pop_lag_milliseconds", "Age of the messages popped from this queue in the most recent closed minute, in ms, by stat (Queen's name; queen_queue_pop_lag_seconds is the same in seconds).", "queue", "stat")
	mQueueLagSec = desc("queen_queue_pop_lag_seconds", "Age of the messages popped from this queue in the most recent closed minute, by stat.", "queue", "stat")
	mDLQByQueue  = desc("queen_dlq_depth_by_queue", "Messages in the dead-letter queue of each queue.", "queue")
	mDLQDepth    = &promDesc{name: "queen_dlq_depth", help: "Messages in every dead-letter queue.", cons: map[string]string{"scope": "cluster"}}
	mSegBytes    = desc("comb_segment_bytes", "Bytes of whole segments in the partition and DLQ logs that have listed their files since start (see comb_segment_logs_unlisted).")
	mSegUnlisted = desc("comb_segment_logs_unlisted", "Logs opened from the shutdown summary and not read since start: their bytes are not in comb_segment_bytes.")
	mCheckpoint  = desc("comb_checkpoint_latency_seconds", "Cursor checkpoints from their commit-log append to durable, since start.")

	mGroupLag     = desc("comb_consumer_group_lag_messages", "Messages after this consumer group's cursors on this queue's partitions (__QUEUE_MODE__ is queue mode).", "queue", "consumer_group")
	mGroupLagSec  = desc("comb_consumer_group_lag_seconds", "Age of the oldest message this consumer group has not consumed on this queue, whole seconds; 0 without lag.", "queue", "consumer_group")
	mGroupLagging = desc("comb_consumer_group_lagging_partitions", "Partitions of this queue where this consumer group has lag.", "queue", "consumer_group")
)

// collectSeries sends the per-queue families and the DLQ depths, when the backend keeps them
// (statusBackend), and the lag of every (queue, consumer group) (Reports.ConsumerGroups, the
// rows GET /api/v1/consumer-groups answers: one cursor walk and one message read per lagging
// partition per scrape).
func (s *Server) collectSeries(e emitter) {
	for _, g := range s.rep.ConsumerGroups() {
		e.gauge(mGroupLag, float64(g.TotalLag), g.Queue, g.Name)
		e.gauge(mGroupLagSec, float64(g.MaxTimeLagSeconds), g.Queue, g.Name)
		e.gauge(mGroupLagging, float64(g.PartitionsWithLag), g.Queue, g.Name)
	}
	sb, ok := s.rep.(statusBackend)
	if !ok {
		return
	}
	type row struct {
		queue string
		p     analytics.Point
	}
	var rows []row
	sb.LastMinute(func(queue string, p analytics.Point) { rows = append(rows, row{queue, p}) })
	sort.Slice(rows, func(i, j int) bool { return rows[i].queue < rows[j].queue })
	for _, r := range rows {
		q, p := r.queue, r.p
		e.gauge(mQueuePush, float64(p.Ingested), q)
		e.gauge(mQueuePop, float64(p.Popped), q)
		e.gauge(mQueueAck, float64(p.Processed), q, "success")
		e.gauge(mQueueAck, float64(p.Errors), q, "failed")
		avg, mx := round2(p.AvgLagMs()), float64(p.LagMaxMs)
		e.gauge(mQueueLagMs, avg, q, "avg")
		e.gauge(mQueueLagMs, mx, q, "max")
		e.gauge(mQueueLagSec, avg/1000, q, "avg")
		e.gauge(mQueueLagSec, mx/1000, q, "max")
	}

	var total int64
	sb.DLQDepths(func(queue string, n int64) {
		total += n
		e.gauge(mDLQByQueue, float64(n), queue)
	})
	e.gauge(mDLQDepth, float64(total))

	segBytes, unlisted := sb.SegmentBytes()
	e.gauge(mSegBytes, float64(segBytes))
	e.gauge(mSegUnlisted, float64(unlisted))
	e.histogramMicros(mCheckpoint, sb.CheckpointLatency())
}
