package broker

// This file is the streams part of the contract between broker/ and httpapi/
// (spec 10, issue 12): the shapes of the three /streams/v1 routes and of the
// read-side list of queries. httpapi parses and encodes JSON (snake_case);
// the broker owns every rule and the state store.

import "errors"

// ErrConflict maps to HTTP 409: a stream query registered again under the
// same name with a different config_hash and no reset (spec 10).
var ErrConflict = errors.New("conflict")

// Conflict returns an error that wraps ErrConflict and whose Error() is msg exactly.
func Conflict(msg string) error { return &userError{msg: msg, kind: ErrConflict} }

// Limits of the streams state store (issue 12: "state size limits with clear
// 4xx errors"). A cycle that would break one is refused with ErrBadRequest
// and applies nothing.
const (
	MaxStreamKeyBytes     = 1024      // bytes of one state key (UTF-8)
	MaxStreamValueBytes   = 256 << 10 // bytes of one state value (its JSON text)
	MaxStreamKeysPerShard = 100_000   // live keys of one (query, partition) shard
	// MaxStreamShardBytes bounds the bytes of keys and values of one shard:
	// the store keeps every shard in memory (100,000 keys of 256 KiB would be
	// 25 GB).
	MaxStreamShardBytes    = 64 << 20
	MaxStreamOpsPerCycle   = 10_000 // state ops in one cycle
	MaxStreamQueryNameLen  = 255    // bytes of a query name
	MaxStreamConfigHashLen = 255    // bytes of a config_hash
)

// StreamQueryRequest is POST /streams/v1/queries (spec 10).
type StreamQueryRequest struct {
	Name        string // required
	SourceQueue string // required
	SinkQueue   string // "" means none
	ConfigHash  string // required
	Reset       bool
}

// StreamQueryResult is the 200 answer of POST /streams/v1/queries (spec 10).
// QueryID is a UUID string, stable for a name across re-registrations and resets.
type StreamQueryResult struct {
	QueryID    string
	Name       string
	ConfigHash string
	Fresh      bool // the name was not registered before
	Reset      bool // the hash changed with reset:true and the state was wiped
}

// StreamStateOp is one entry of a cycle's state_ops.
type StreamStateOp struct {
	Type string // "upsert" or "delete"
	Key  string
	// Value is an upsert's JSON text as sent ({} when absent); nil for a
	// delete. StreamCycle hands it to the state store, which keeps it: the
	// caller must not modify it afterwards (the HTTP layer passes the
	// decoder's own copy, never its request buffer).
	Value []byte
}

// StreamAck is a cycle's source ack (spec 10; the clients send the last
// message of the popped batch).
type StreamAck struct {
	TransactionID string // required
	LeaseID       string // "" skips the lease check
	Status        string // "completed" (default) | "success" | "failed" | "dlq"
	Error         string // failed/dlq: the DLQ entry's error message
	Count         int    // messages acked by this cycle (reporting only); 0 means 1
}

// StreamCycleRequest is POST /streams/v1/cycle (spec 10).
type StreamCycleRequest struct {
	QueryID      string // required (ErrBadRequest)
	PartitionID  string // required (ErrBadRequest): the source partition's id
	Group        string // "" means QueueModeGroup
	StateOps     []StreamStateOp
	Push         []PushItem // sink pushes, as /push
	Ack          *StreamAck // nil: no source ack (the clients' window flush cycles)
	ReleaseLease bool       // the HTTP layer defaults it to true
}

// StreamAckResult is a cycle's ack_result.
type StreamAckResult struct {
	Success       bool
	Count         int
	LeaseReleased bool
	DLQ           bool
}

// StreamCycleResult is the 200 answer of POST /streams/v1/cycle. A cycle that
// cannot apply (unknown query, message not found, invalid or expired lease,
// unknown op type or ack status) is Success=false with Error set and nothing
// applied: still HTTP 200 (spec 10).
type StreamCycleResult struct {
	Success         bool
	Error           string
	QueryID         string
	PartitionID     string
	QueueName       string // the source partition's queue
	StateOpsApplied int
	PushResults     []PushResult
	Ack             *StreamAckResult // nil when the cycle had no ack
}

// StreamStateRequest is POST /streams/v1/state/get (spec 10; key_prefix and
// ripe_at_or_before are sent by the clients' idle window flush).
type StreamStateRequest struct {
	QueryID     string // required (ErrBadRequest)
	PartitionID string // required (ErrBadRequest)
	Keys        []string
	KeyPrefix   string
	// Match, when non-nil, keeps only rows whose value it accepts (the HTTP
	// layer's ripe_at_or_before filter on the value's windowEnd).
	Match func(value []byte) bool
}

// StreamStateRow is one row of state/get.
type StreamStateRow struct {
	Key             string
	Value           []byte // JSON text
	UpdatedAtMicros int64
}

// StreamQueryInfo is one registered query in the read-side list
// (GET /api/v1/streams/queries, a comb route).
type StreamQueryInfo struct {
	QueryID         string
	Name            string
	SourceQueue     string
	SinkQueue       string
	ConfigHash      string
	CreatedAtMicros int64
	UpdatedAtMicros int64
	Shards          int   // (query, partition) shards holding state
	Keys            int   // live keys over all shards
	StateBytes      int64 // bytes of keys and values over all shards
	Cycles          uint64
}

// StreamStats are the process-wide streams counters of /metrics/prometheus.
type StreamStats struct {
	Queries      int
	Cycles       uint64 // cycles that committed since start
	FailedCycles uint64 // cycles answered success:false since start
	StateKeys    int
	StateBytes   int64
}
