package httpapi

import (
	"context"

	"github.com/combmq/comb/broker"
)

// Backend is what the HTTP layer asks of the broker's engine: the hot paths (push, pop, ack,
// transactions, leases), the admin writes (configure, delete, seek, maintenance, subscription
// timestamps) and health; a subset of *broker.Broker's method set. The read-side reports come
// from Reports (reports.go). Tests substitute an in-memory fake.
type Backend interface {
	// Healthy reports whether storage is usable; false makes GET /health answer 503 (spec 8.1).
	Healthy() bool
	// CheckpointFailure reports cursor checkpoints failing now (a full disk: GET /health says
	// "degraded" until the next good one; a failed fdatasync: "unhealthy" until a restart).
	CheckpointFailure() (broker.CheckpointFailure, bool)
	// NoSpace reports writes failing for want of disk space now (issue 21: GET /health says
	// "degraded" with "diskFull"; a state, nothing is damaged, writes resume once space is freed).
	NoSpace() (broker.NoSpaceState, bool)
	// Replication is a replicated node's role and leader (GET /health); false on a single node.
	Replication() (broker.ReplicationStatus, bool)
	Configure(req broker.ConfigureRequest) (broker.ConfigureResult, error)
	// Push: items (the slice, not the strings and payload bytes it names) is the caller's again
	// once Push returns: the push handler reuses it for the next request (push_scratch.go), so
	// a Backend copies the slice if it keeps it.
	// PushInto writes the results into dst's memory when it has room (the handler lends the
	// slice of its previous request); dst is the caller's again once it returns, too.
	PushInto(dst []broker.PushResult, items []broker.PushItem) ([]broker.PushResult, error)
	// Pop may block up to req.Timeout when req.Wait; it must return promptly once ctx is
	// cancelled (server shutdown), with no messages claimed.
	Pop(ctx context.Context, req broker.PopRequest) (broker.PopResult, error)
	// QueueExists reports whether the queue exists, for the notice on a pop's 204 (issue 25).
	QueueExists(name string) bool
	// AckInto is Broker.Ack with the results in dst's memory when it has room (the ack/batch
	// handler lends the slice of its previous request, ack_scratch.go). items and dst are the
	// caller's again once it returns: a Backend copies what it keeps.
	AckInto(dst []broker.AckResult, group string, items []broker.AckItem) ([]broker.AckResult, error)
	Transaction(ops []broker.TxOp) (broker.TxResult, error)
	ExtendLease(leaseID string, seconds int64) broker.ExtendResult
	Seek(group, queue string, toEnd bool, tsMicros int64) (broker.SeekResult, error)
	SeekPartition(group, queue, partition string) (broker.PartitionSeekResult, error)
	DeleteGroup(group, queue string, deleteMetadata bool) (int, error)
	DeleteQueue(queue string) (bool, error)
	// Damaged lists the partitions out of service because their log reported on-disk damage;
	// GET /health reports them ("degraded").
	Damaged() []broker.DamagedPartition
	// SetSubscriptionTimestamp serves spec 7.5.
	SetSubscriptionTimestamp(group string, tsMicros int64) (int, error)
	// Maintenance, SetPushMaintenance and SetPopMaintenance serve spec 1.8 and 8.8.
	Maintenance() broker.MaintenanceStatus
	SetPushMaintenance(on bool) (broker.MaintenanceStatus, error)
	SetPopMaintenance(on bool) (broker.MaintenanceStatus, error)
	// MessageBackend serves the message deletion and the trace routes (spec 8.5, 9.3;
	// messages.go).
	MessageBackend
	// StreamBackend serves spec 10 (streams_backend.go).
	StreamBackend
}

var _ Backend = (*broker.Broker)(nil)
