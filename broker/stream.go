package broker

import "errors"

// errStreamsTODO marks the streams entry points before issue 12's state store lands.
var errStreamsTODO = errors.New("streams: not implemented yet")

// StreamRegister registers a stream query by name (spec 10).
//
// Errors: ErrBadRequest (missing or too long name, source_queue or config_hash),
// ErrConflict (a different config_hash without reset), ErrClosed, storage errors.
func (b *Broker) StreamRegister(req StreamQueryRequest) (StreamQueryResult, error) {
	return StreamQueryResult{}, errStreamsTODO
}

// StreamCycle applies one streams cycle atomically (spec 10).
//
// Errors: ErrBadRequest (missing query_id or partition_id, a broken limit),
// ErrClosed, storage errors. A cycle that cannot apply is a result with Success=false.
func (b *Broker) StreamCycle(req StreamCycleRequest) (StreamCycleResult, error) {
	return StreamCycleResult{}, errStreamsTODO
}

// StreamState reads a (query, partition) shard's rows (spec 10).
//
// Errors: ErrBadRequest (missing query_id or partition_id), ErrClosed.
func (b *Broker) StreamState(req StreamStateRequest) ([]StreamStateRow, error) {
	return nil, errStreamsTODO
}

// StreamQueries lists the registered queries with their state size.
func (b *Broker) StreamQueries() []StreamQueryInfo { return nil }

// StreamStats reports the streams counters for /metrics/prometheus.
func (b *Broker) StreamStats() StreamStats { return StreamStats{} }
