package httpapi

import (
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// Reports is what the HTTP layer asks of the read side: the reports of package report, built
// from the broker's read-only view (report.New(b.View())). They answer the admin routes and
// /metrics; none changes broker state. Tests substitute an in-memory fake, the same one as
// their Backend.
type Reports interface {
	// DLQ serves GET /api/v1/dlq (spec 8.6).
	DLQ(f report.DLQFilter) ([]report.DLQEntry, int, error)
	// ConsumerGroups, GroupDetail and LaggingPartitions serve spec 7.6.
	ConsumerGroups() []report.GroupSummary
	GroupDetail(group string) []report.GroupPartition
	LaggingPartitions(minLagSeconds int64) []report.LaggingPartition
	// Stats is /metrics' and /metrics/prometheus' counters and gauges (spec 8.2, 8.3).
	Stats() broker.Stats
	// Storage is the data directory's and the flush pass's figures (GET /api/v1/storage).
	Storage() report.StorageStatus
	// The Resource* methods serve spec 8.4.
	ResourcesOverview() report.ResourceOverview
	ResourceQueues(f report.ResourceFilter) []report.ResourceQueue
	ResourceQueue(name string, page report.PartitionPage) (report.ResourceQueueDetail, bool)
	ResourceNamespaces() []report.ResourceLabel
	ResourceTasks() []report.ResourceLabel
	// Messages and Message serve the message list and detail (spec 8.5; messages.go).
	Messages(f report.MessageFilter) (report.MessageList, error)
	Message(partitionID, transactionID string) (report.MessageDetail, error)
}

var _ Reports = (*report.Reports)(nil)
