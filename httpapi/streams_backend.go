package httpapi

import "github.com/combmq/comb/broker"

// StreamBackend serves the /streams/v1 routes and the read-side query list
// (spec 10, issue 12).
type StreamBackend interface {
	StreamRegister(req broker.StreamQueryRequest) (broker.StreamQueryResult, error)
	StreamCycle(req broker.StreamCycleRequest) (broker.StreamCycleResult, error)
	StreamState(req broker.StreamStateRequest) ([]broker.StreamStateRow, error)
	StreamQueries() []broker.StreamQueryInfo
	StreamStats() broker.StreamStats
}
