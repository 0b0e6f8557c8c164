package bench

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Workload names the shape of a run (issue 6, "comb bench").
type Workload string

const (
	// WorkloadPush sends batches of --batch messages to --queues × --partitions destinations.
	WorkloadPush Workload = "push"
	// WorkloadConsume prefills a backlog, then pops batches and acks each batch (queue mode when
	// --groups is 0, else --groups named consumer groups share the consumers).
	WorkloadConsume Workload = "consume"
	// WorkloadE2E runs producers and consumers together; latency runs from the (intended) send
	// time embedded in the payload to the moment a consumer holds the message.
	WorkloadE2E Workload = "e2e"
	// WorkloadFanout has --groups consumer groups read the same queue while pushes continue.
	WorkloadFanout Workload = "fanout"
	// WorkloadLongPoll parks --concurrency consumers with wait=true, one queue each, and measures
	// the latency from push to wake.
	WorkloadLongPoll Workload = "longpoll"
	// WorkloadCycle prefills a backlog, then pops batches and commits each with one streams
	// cycle (spec 10): --state-ops state upserts, one sink push and the source ack (cycle.go).
	WorkloadCycle Workload = "cycle"
	// WorkloadTransaction is WorkloadCycle's baseline: the same pops, each committed with one
	// POST /api/v1/transaction of the same sink push and source ack, without state.
	WorkloadTransaction Workload = "transaction"
)

// Workloads lists every workload in the order reports show them.
var Workloads = []Workload{WorkloadPush, WorkloadConsume, WorkloadE2E, WorkloadFanout, WorkloadLongPoll, WorkloadCycle, WorkloadTransaction}

// Driver names accepted by Config.Driver.
const (
	DriverComb  = "comb" // any Queen v1 HTTP server
	DriverRedis = "redis"
	DriverNATS  = "nats"
)

// Config is one run. Zero fields take the defaults of DefaultConfig when passed through
// Normalize.
type Config struct {
	Workload Workload
	Driver   string // DriverComb, DriverRedis or DriverNATS

	URL       string // Queen-compatible server, e.g. http://127.0.0.1:6632
	RedisAddr string // host:port of redis-server
	NATSURL   string // nats://host:port

	Queues      int // distinct queues (Redis: streams per partition; NATS: one stream per queue)
	Partitions  int // partitions per queue
	Batch       int // messages per push request and most messages per pop
	Size        int // payload bytes per message
	Concurrency int // connections of the workload's main role (pushers for push, consumers otherwise)
	Producers   int // pushers in e2e and fanout
	Groups      int // consumer groups; 0 = queue mode (consume, e2e); fanout needs >= 1

	Duration time.Duration // measured window
	Warmup   time.Duration // run before the window opens; nothing recorded
	Interval time.Duration // > 0: the rate and server CPU per request of every slice this long (Result.Intervals)
	Rate     float64       // open-loop target, msg/s over all pushers; 0 = closed loop
	Prefill  int           // consume: backlog size in messages
	WaitMs   int           // long-poll timeout of a pop, ms
	StateOps int           // cycle: state upserts per cycle
	// RetentionSeconds > 0 configures every queue of the run with retentionEnabled and this
	// retentionSeconds before the window (spec 2.2; driver comb only), so a sustained run
	// shows whether memory stays flat once retention deletes as fast as pushes arrive
	// (issue 23); 0 = the server's defaults (nothing deleted).
	RetentionSeconds int

	Token      string // driver comb: sent as "Authorization: Bearer <Token>" (JWT auth, spec 9.1); "" = none
	ServerPID  int    // 0 = discover the local process listening on the target port
	SyncMetric string // driver comb: counter of /metrics/prometheus read at the window's edges for syncs per request; "" = none
	Progress   bool   // print a live progress line on stderr once a second
	RunID      string

	// FollowerPIDs are the other nodes of a cluster whose leader is ServerPID: their CPU over
	// the window is reported beside the leader's (Result.FollowerCPUPercent); nil = none.
	FollowerPIDs []int
}

// DefaultConfig is what `comb bench` uses when a flag is not given.
func DefaultConfig() Config {
	return Config{
		Workload:    WorkloadPush,
		Driver:      DriverComb,
		URL:         "http://127.0.0.1:6632",
		RedisAddr:   "127.0.0.1:6379",
		NATSURL:     "nats://127.0.0.1:4222",
		Queues:      1,
		Partitions:  16,
		Batch:       100,
		Size:        200,
		Concurrency: 16,
		Producers:   4,
		Groups:      0,
		Duration:    10 * time.Second,
		Warmup:      time.Second,
		Prefill:     1_000_000,
		WaitMs:      1000,
		StateOps:    4,
		SyncMetric:  DefaultSyncMetric,
	}
}

// Normalize fills workload-specific defaults and checks ranges. The returned error wraps
// ErrConfig.
func (c Config) Normalize() (Config, error) {
	if c.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.RunID = hex.EncodeToString(b[:])
	}
	switch c.Workload {
	case WorkloadPush, WorkloadConsume, WorkloadE2E:
	case WorkloadFanout:
		if c.Groups < 1 {
			c.Groups = 10
		}
	case WorkloadLongPoll:
		// One queue per parked consumer, so every push wakes exactly one of them.
		c.Queues = c.Concurrency
		c.Partitions = 1
		if c.Rate <= 0 {
			c.Rate = 1000
		}
	case WorkloadCycle, WorkloadTransaction:
		// Streams cycles and transactions are routes of the Queen HTTP API only.
		if c.Driver != DriverComb {
			return c, fmt.Errorf("workload %s runs with driver comb only: %w", c.Workload, ErrConfig)
		}
	default:
		return c, fmt.Errorf("workload %q (want push|consume|e2e|fanout|longpoll|cycle|transaction): %w", c.Workload, ErrConfig)
	}
	switch c.Driver {
	case DriverComb, DriverRedis, DriverNATS:
	default:
		return c, fmt.Errorf("driver %q (want comb|redis|nats): %w", c.Driver, ErrConfig)
	}
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{
		{"queues", c.Queues, 1}, {"partitions", c.Partitions, 1}, {"batch", c.Batch, 1},
		{"size", c.Size, 2}, {"concurrency", c.Concurrency, 1}, {"producers", c.Producers, 1},
		{"groups", c.Groups, 0}, {"prefill", c.Prefill, 0}, {"wait-ms", c.WaitMs, 1}, {"state-ops", c.StateOps, 0},
		{"retention-seconds", c.RetentionSeconds, 0},
	} {
		if f.v < f.min {
			return c, fmt.Errorf("--%s %d is below %d: %w", f.name, f.v, f.min, ErrConfig)
		}
	}
	if c.RetentionSeconds > 0 && c.Driver != DriverComb {
		return c, fmt.Errorf("--retention-seconds configures Queen queues: driver comb only: %w", ErrConfig)
	}
	if c.Duration <= 0 {
		return c, fmt.Errorf("--duration must be positive: %w", ErrConfig)
	}
	if c.Warmup < 0 || c.Rate < 0 {
		return c, fmt.Errorf("--warmup and --rate must not be negative: %w", ErrConfig)
	}
	if c.needsTimes() && c.Size < MinTimedPayload {
		return c, fmt.Errorf("--size %d: workload %s embeds the send time and needs at least %d bytes: %w",
			c.Size, c.Workload, MinTimedPayload, ErrConfig)
	}
	return c, nil
}

// needsTimes reports whether consumers must read the send time out of each payload.
func (c Config) needsTimes() bool {
	return c.Workload == WorkloadE2E || c.Workload == WorkloadFanout || c.Workload == WorkloadLongPoll
}

// groupName is the consumer group a consumer of group index g uses; "" is queue mode.
func (c Config) groupName(g int) string {
	if c.Groups == 0 {
		return ""
	}
	return fmt.Sprintf("bench-%s-g%d", c.RunID, g)
}

// groupNames lists the groups of the run (one "" entry in queue mode).
func (c Config) groupNames() []string {
	if c.Groups == 0 {
		return []string{""}
	}
	out := make([]string, c.Groups)
	for i := range out {
		out[i] = c.groupName(i)
	}
	return out
}
