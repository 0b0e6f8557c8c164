package bench

import (
	"context"
	"time"
)

// Driver is the seam between the workloads and a broker. The workloads own the shape (who
// sends what, when, and what is measured); a driver only maps "push n copies of this payload to
// queue q partition p", "pop up to n from queue q for group g" and "ack that batch" onto its
// broker's protocol.
type Driver interface {
	// Name is the driver's name in reports: comb, redis or nats.
	Name() string
	// Target is the address the driver talks to (URL or host:port).
	Target() string
	// Setup creates whatever must exist before the first push or pop (streams, consumer
	// groups). The Queen HTTP API creates queues, partitions and groups on first use, so the
	// HTTP driver does nothing here.
	Setup(ctx context.Context, t Topology) error
	// NewWorker returns a connection-holding worker for one goroutine.
	NewWorker(id int) (Worker, error)
	Close() error
}

// Topology is what a run will touch: queue and partition indexes and group names.
type Topology struct {
	RunID      string
	Queues     int
	Partitions int
	Groups     []string // "" = queue mode
	// RetentionSeconds > 0: the queues delete messages older than this (Config.RetentionSeconds).
	RetentionSeconds int
}

// Dest is one push destination.
type Dest struct{ Queue, Partition int }

// Source is one pop.
type Source struct {
	Queue      int
	Partitions []int         // the worker's share of the queue's partitions (peers read these; comb's wildcard pop lets the server choose)
	Group      string        // "" = queue mode
	Max        int           // most messages
	Wait       time.Duration // 0 = answer at once; else long-poll up to this long
	WantTimes  bool          // fill Batch.SentNanos from the payloads
	// GroupLabel, when set, records each message's end-to-end latency under this label too
	// (fanout: "g0", "g1", ...; Result.GroupE2ELatencyMs), besides the all-groups "e2e".
	GroupLabel string
}

// Worker is one goroutine's client. Not safe for concurrent use.
type Worker interface {
	// Push sends n copies of payload to d in one request (or one pipelined round trip) and
	// returns how many items the broker reported as failed.
	Push(ctx context.Context, d Dest, payload []byte, n int) (failed int, err error)
	// Pop fetches up to s.Max messages. An empty batch (Len() == 0) means nothing to deliver.
	// The batch is valid until the next Pop on this worker.
	Pop(ctx context.Context, s Source) (Batch, error)
	// Ack acknowledges every message of b and returns how many the broker refused.
	Ack(ctx context.Context, b Batch) (failed int, err error)
	Close() error
}

// Batch is what one Pop delivered.
type Batch interface {
	Len() int
	// SentNanos is the send time embedded in message i (Unix ns), 0 when absent or not asked.
	SentNanos(i int) int64
}
