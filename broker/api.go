package broker

// This file is the contract between broker/ and httpapi/: the request and result
// shapes of every operation the HTTP layer calls. The HTTP layer only parses into
// these types and encodes them; every rule (spec sections 1-8) lives in broker/.

import (
	"errors"
	"time"

	"github.com/combmq/comb/commitlog"
)

// QueueModeGroup is the implicit consumer group of a pop or ack that names none
// (seed 000, "Consumer groups"; spec 3.7).
const QueueModeGroup = "__QUEUE_MODE__"

// DefaultPartition is the partition of a push item that names none, or names "" (spec 1.1, 11 #28).
const DefaultPartition = "Default"

// Sentinel errors. httpapi maps them to statuses: ErrBadRequest → 400,
// ErrNotFound → 404, ErrClosed and ErrNotLeader → 503, anything else → 500.
// Wrapped errors keep the sentinel (errors.Is) and carry the user-facing
// message in Error().
var (
	ErrBadRequest = errors.New("bad request")
	ErrNotFound   = errors.New("not found")
	ErrClosed     = errors.New("broker closed")
	// ErrNotLeader: a request that writes reached a node of a replicated
	// cluster that does not lead it (issue 15); nothing was changed.
	ErrNotLeader = errors.New("this node does not lead its cluster")
)

// BadRequest returns an error that wraps ErrBadRequest and whose Error() is msg
// exactly, so the HTTP layer can send {"error": msg}.
func BadRequest(msg string) error { return &userError{msg: msg, kind: ErrBadRequest} }

// NotFound returns an error that wraps ErrNotFound and whose Error() is msg exactly.
func NotFound(msg string) error { return &userError{msg: msg, kind: ErrNotFound} }

type userError struct {
	msg  string
	kind error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.kind }

// ConfigureRequest is POST /api/v1/configure (spec 2.1): a whole replace.
type ConfigureRequest struct {
	Queue     string
	Namespace string
	Task      string
	Options   QueueOptions
}

// ConfigureResult is the 200 answer of configure (spec 2.4).
type ConfigureResult struct {
	QueueID     string
	PartitionID string // id of the Default partition
	Queue       string
	Namespace   string
	Task        string
	Options     QueueOptions
	// StoredPlain: the queue has encryptionEnabled but this broker holds no key, so its
	// payloads are stored in plaintext (spec 9.2); configure's answer warns (issue 25).
	StoredPlain bool
}

// PushItem is one item of POST /api/v1/push or of a transaction's push op (spec 1.1).
type PushItem struct {
	Queue         string
	Partition     string // "" means Default
	Payload       []byte // the raw JSON value exactly as pushed; nil means null
	TransactionID string // "" means generate a UUID
	TraceID       string // "" means null
	ProducerSub   string // stamped by the HTTP layer from auth; "" means null
}

// PushStatus is the per-item outcome of a push (spec 1.6).
type PushStatus uint8

const (
	PushQueued PushStatus = iota
	PushDuplicate
	PushFailed
	PushBuffered
)

func (s PushStatus) String() string {
	switch s {
	case PushQueued:
		return "queued"
	case PushDuplicate:
		return "duplicate"
	case PushFailed:
		return "failed"
	default:
		return "buffered"
	}
}

// PushResult is one entry of the push answer, in input order (spec 1.6).
type PushResult struct {
	Status        PushStatus
	TransactionID string
	MessageID     string // queued: new id; duplicate: the existing message's id
	PartitionID   string
	Partition     string
	TraceID       string // "" means null
	Queue         string
	Error         string // failed only
}

// PopRequest is one of the three pop shapes (spec 3.1, 3.2) with broker defaults
// already applied by the HTTP layer (batch 200, partitions 1, timeout 30000 ms).
type PopRequest struct {
	Queue     string // wildcard or targeted pop; "" for a discovery pop
	Partition string // non-empty: targeted pop of exactly this partition
	Namespace string // discovery filter
	Task      string // discovery filter

	Batch            int
	Partitions       int
	Group            string // "" means QueueModeGroup
	AutoAck          bool
	Wait             bool
	Timeout          time.Duration
	LeaseSeconds     int64  // <= 0 means the queue's leaseTime, else 60
	SubscriptionMode string // "all", "new", "new-only"; anything else means all
	SubscriptionFrom string // "", "now" or ISO 8601; unparsable → ErrBadRequest
	WorkerID         string
}

// Message is one delivered message (spec 3.3). Payload may alias broker-owned
// memory: it is valid until PopResult.Release.
type Message struct {
	ID            string
	TransactionID string
	TraceID       string // "" means null
	ProducerSub   string // "" means null
	Payload       []byte
	// PayloadError is set, and Payload nil, when the stored payload is encrypted
	// and no configured key opens it (spec 9.2; atrest.go): never ciphertext.
	PayloadError    string
	CreatedAtMicros int64 // the segment timestamp, µs since the Unix epoch
	Queue           string
	Partition       string
	PartitionID     string
	RetryCount      int64
	Offset          uint64
}

// PopResult is the 200 envelope of a pop; no messages means 204 (spec 3.3, 3.4).
type PopResult struct {
	Queue             string // "" for a discovery pop
	Partition         string // first claimed partition
	PartitionID       string
	LeaseID           string // "" with autoAck
	Group             string
	Messages          []Message
	PartitionsClaimed int

	hold *popHold // what Release recycles (read_hold.go); nil once released
	gen  uint64   // hold's generation when this result was handed out
}

// Release returns the buffers the messages' payloads alias, the text their
// ids view and the Messages slice itself to their pools. Call it once the
// response has been written; the result (and every copy of it) must not be
// used afterwards: Payload and ID are then invalid (TransactionID, TraceID,
// ProducerSub and the names stay valid). A second call, on this result or a
// copy, does nothing.
func (r *PopResult) Release() {
	if h := r.hold; h != nil {
		r.hold = nil
		h.release(r.gen, r.Messages)
	}
}

// AckItem is one acknowledgement (spec 4.1, 4.2).
type AckItem struct {
	TransactionID string
	PartitionID   string
	LeaseID       string // "" skips the lease check (spec 4.6 step 1)
	Status        string // "" means completed
	Error         string // kept on DLQ entries
}

// AckResult is one result item, in input order (spec 4.4). Empty strings encode as null.
type AckResult struct {
	Index            int
	TransactionID    string
	Success          bool
	Error            string
	QueueName        string
	PartitionName    string
	LeaseReleased    bool
	DLQ              bool
	AlreadyCommitted bool
}

// TxOp is one flattened transaction operation (spec 5.1).
type TxOp struct {
	Type  string // "push" or "ack"
	Push  PushItem
	Ack   AckItem
	Group string // ack ops only; "" means QueueModeGroup
}

// TxOpResult is one operation's result (spec 5.3).
type TxOpResult struct {
	Index         int
	Type          string
	Success       bool
	TransactionID string
	MessageID     string
	PartitionID   string
	QueueName     string
	Error         string
	DLQ           bool
	Duplicate     bool // push: (partition, transactionId) already stored; nothing written, success (spec 5.2, 11 #42)
}

// TxResult is the 200 answer of POST /api/v1/transaction (spec 5.3).
type TxResult struct {
	TransactionID string
	Success       bool
	Error         string
	Results       []TxOpResult
}

// ExtendResult is the answer of POST /api/v1/lease/:leaseId/extend (spec 6).
type ExtendResult struct {
	Renewed            int
	NewExpiresAtMicros int64  // 0 when nothing was renewed
	Error              string // "Lease not found", "Lease already expired" or ""
	// Err: the renewal could not be made durable (the cursor checkpoint
	// failed, e.g. a full disk) and was undone; nothing was renewed. HTTP 5xx.
	Err error
}

// SeekResult is the answer of a queue-wide seek (spec 7.1).
type SeekResult struct {
	PartitionsUpdated int
}

// PartitionSeekResult is the answer of a one-partition seek (spec 7.2).
type PartitionSeekResult struct {
	Updated             bool
	CursorMovedToMicros int64 // 0 means null
}

// Stats is what /metrics and /metrics/prometheus expose.
type Stats struct {
	PushRequests, PushMessages uint64
	PopRequests, PopMessages   uint64
	AckRequests, AckMessages   uint64
	AckSuccess, AckFailed      uint64
	DLQMessages                uint64
	ParkedPops                 int64
	Queues, Partitions         int
	OpenPartitions             int
	TotalLag                   int64
	// SyncLatency is the cumulative histogram of group-commit sync durations since Open.
	SyncLatency LatencyHistogram
	// GroupCommit counts the commit log's batches, the callers they served
	// and its group-commit waits (zero under a replicated log).
	GroupCommit commitlog.GroupStats

	// Issue 7: bounded files, idle eviction, retention.
	OpenFiles, MaxOpenFiles int    // partition and DLQ file handles held / allowed (segment.HandleCache)
	HandleReleases          uint64 // logs whose handles were closed to stay under MaxOpenFiles
	EvictedPartitions       uint64 // partitions released after Config.IdleEvict unused (seed 004)
	RetentionFilesDeleted   uint64 // segment files removed by retention (spec 2.2)
	RetentionBytesReclaimed uint64 // their bytes
	RetentionCursorsMoved   uint64 // cursors moved up to a new low-water mark

	// DamagedPartitions counts partitions out of service because their log
	// reported on-disk damage (Broker.Damaged lists them).
	DamagedPartitions int

	// Issue 11, encryption at rest (atrest.go): payloads sealed, sealed payloads
	// a read could not open, payloads of encryptionEnabled queues stored plain
	// because no key is configured.
	PayloadsSealed, PayloadOpenFailures, PayloadsStoredPlain uint64
}
