package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// errorBackoff keeps a worker whose requests fail (server gone, refused connection) from
// spinning a core the server needs.
const errorBackoff = 10 * time.Millisecond

// pushSpec is one pusher's job.
type pushSpec struct {
	dests    []Dest
	offset   int       // first destination, so pushers spread over the destinations
	batch    int       // messages per request
	size     int       // payload bytes
	timeline *Timeline // nil = closed loop
	// remaining, when not nil, is a shared budget of messages (prefill); the pusher stops
	// when it is spent.
	remaining *atomic.Int64
}

// pushLoop pushes until ctx ends or the budget is spent. Request latency is measured from the
// due time on a timeline (open loop) and from the send otherwise; every message carries that
// same time as its send time.
func pushLoop(ctx context.Context, w Worker, ws *WorkerStats, s pushSpec) {
	payload := NewPayload(s.size)
	i := int64(s.offset)
	for ctx.Err() == nil {
		n := s.batch
		if s.remaining != nil {
			left := s.remaining.Add(-int64(n))
			if left+int64(n) <= 0 {
				return
			}
			if left < 0 {
				n += int(left)
			}
		}
		var due time.Time
		dest := s.dests[i%int64(len(s.dests))]
		if s.timeline != nil {
			k, at := s.timeline.Next()
			dest = s.dests[(k+int64(s.offset))%int64(len(s.dests))]
			if !waitUntil(ctx, at) {
				return
			}
			due = at
		} else {
			due = time.Now()
		}
		i++
		payload.Stamp(due.UnixNano())
		failed, err := w.Push(ctx, dest, payload.Bytes(), n)
		end := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ws.Error(err)
			if s.remaining != nil {
				s.remaining.Add(int64(n)) // a prefill must reach its size
			}
			waitUntil(ctx, end.Add(errorBackoff))
			continue
		}
		ws.Request(OpPush, end.Sub(due))
		ws.FailedItems(OpPush, failed)
		ws.Pushed(n - failed)
	}
}

// consumeLoop pops and acks until ctx ends. Pop latency is the pop request alone; end-to-end
// latency runs from the send time embedded in each message to the moment the pop answer was
// in hand, before the ack.
func consumeLoop(ctx context.Context, w Worker, ws *WorkerStats, src Source) {
	for ctx.Err() == nil {
		b, recv, ok := popBatch(ctx, w, ws, src)
		if !ok {
			continue
		}
		n := b.Len()
		if src.WantTimes {
			rn := recv.UnixNano()
			for i := 0; i < n; i++ {
				if t := b.SentNanos(i); t > 0 {
					ws.EndToEnd(src.GroupLabel, time.Duration(rn-t))
				}
			}
		}
		failed, err := w.Ack(ctx, b)
		end := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ws.Error(err)
			continue
		}
		ws.Request(OpAck, end.Sub(recv))
		ws.FailedItems(OpAck, failed)
		ws.Consumed(n - failed)
	}
}

// popBatch pops once and records it: ok is false when the pop failed (after the error
// backoff) or found nothing; recv is when the answer was in hand.
func popBatch(ctx context.Context, w Worker, ws *WorkerStats, src Source) (b Batch, recv time.Time, ok bool) {
	start := time.Now()
	b, err := w.Pop(ctx, src)
	recv = time.Now()
	if err != nil {
		if ctx.Err() == nil {
			ws.Error(err)
			waitUntil(ctx, recv.Add(errorBackoff))
		}
		return b, recv, false
	}
	ws.Request(OpPop, recv.Sub(start))
	if b.Len() == 0 {
		return b, recv, false
	}
	ws.Delivered(b.Len())
	return b, recv, true
}

// allDests lists every (queue, partition) pair, partition-major within a queue.
func allDests(queues, partitions int) []Dest {
	out := make([]Dest, 0, queues*partitions)
	for q := 0; q < queues; q++ {
		for p := 0; p < partitions; p++ {
			out = append(out, Dest{Queue: q, Partition: p})
		}
	}
	return out
}

// consumerSources gives n consumers of one group their queue and their share of its
// partitions: consumer i reads queue i mod queues; the consumers of a queue split its
// partitions round robin (several share a partition when there are more consumers than
// partitions). comb's wildcard pop ignores the share and lets the server choose; the peers
// read exactly their share.
func consumerSources(n, queues, partitions int, base Source) []Source {
	out := make([]Source, n)
	perQueue := make([]int, queues)
	for i := 0; i < n; i++ {
		perQueue[i%queues]++
	}
	for i := 0; i < n; i++ {
		q := i % queues
		j := i / queues // this consumer's rank among its queue's consumers
		m := perQueue[q]
		s := base
		s.Queue = q
		s.Partitions = nil
		if m >= partitions {
			s.Partitions = []int{j % partitions}
		} else {
			for p := j; p < partitions; p += m {
				s.Partitions = append(s.Partitions, p)
			}
		}
		out[i] = s
	}
	return out
}
