package httpapi

import "github.com/combmq/comb/broker"

func (f *fakeBackend) StreamRegister(broker.StreamQueryRequest) (broker.StreamQueryResult, error) {
	return broker.StreamQueryResult{}, nil
}

func (f *fakeBackend) StreamCycle(broker.StreamCycleRequest) (broker.StreamCycleResult, error) {
	return broker.StreamCycleResult{}, nil
}

func (f *fakeBackend) StreamState(broker.StreamStateRequest) ([]broker.StreamStateRow, error) {
	return nil, nil
}

func (f *fakeBackend) StreamQueries() []broker.StreamQueryInfo { return nil }

func (f *fakeBackend) StreamStats() broker.StreamStats { return broker.StreamStats{} }
