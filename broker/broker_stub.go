package broker

// TEMPORARY: the method set httpapi/ codes against, stubbed until the broker
// helper lands the real implementation (it deletes this file).

import (
	"context"
	"errors"
)

var errNotImplemented = errors.New("not implemented yet")

// Broker ties the segment log, the indexes, the cursor engine and the leases together.
type Broker struct{}

func Open(cfg Config) (*Broker, error) { return &Broker{}, nil }
func (b *Broker) Close() error         { return nil }
func (b *Broker) Healthy() bool        { return true }
func (b *Broker) Configure(req ConfigureRequest) (ConfigureResult, error) {
	return ConfigureResult{}, errNotImplemented
}
func (b *Broker) Push(items []PushItem) ([]PushResult, error) { return nil, errNotImplemented }
func (b *Broker) Pop(ctx context.Context, req PopRequest) (PopResult, error) {
	return PopResult{}, errNotImplemented
}
func (b *Broker) Ack(group string, items []AckItem) ([]AckResult, error) {
	return nil, errNotImplemented
}
func (b *Broker) Transaction(ops []TxOp) (TxResult, error)               { return TxResult{}, errNotImplemented }
func (b *Broker) ExtendLease(leaseID string, seconds int64) ExtendResult { return ExtendResult{} }
func (b *Broker) Seek(group, queue string, toEnd bool, tsMicros int64) (SeekResult, error) {
	return SeekResult{}, errNotImplemented
}
func (b *Broker) SeekPartition(group, queue, partition string) (PartitionSeekResult, error) {
	return PartitionSeekResult{}, errNotImplemented
}
func (b *Broker) DeleteGroup(group, queue string, deleteMetadata bool) (int, error) {
	return 0, errNotImplemented
}
func (b *Broker) DeleteQueue(queue string) (bool, error)   { return false, errNotImplemented }
func (b *Broker) DLQ(f DLQFilter) ([]DLQEntry, int, error) { return nil, 0, errNotImplemented }
func (b *Broker) ConsumerGroups() []GroupSummary           { return nil }
func (b *Broker) Stats() Stats                             { return Stats{} }
