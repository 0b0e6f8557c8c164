package httpapi

import "github.com/combmq/comb/broker"

// fakeStreams is the streams part of fakeBackend: the last request of each call, and hooks
// (nil: an empty successful answer).
type fakeStreams struct {
	registerReq broker.StreamQueryRequest
	cycleReq    broker.StreamCycleRequest
	stateReq    broker.StreamStateRequest

	onRegister func(broker.StreamQueryRequest) (broker.StreamQueryResult, error)
	onCycle    func(broker.StreamCycleRequest) (broker.StreamCycleResult, error)
	onState    func(broker.StreamStateRequest) ([]broker.StreamStateRow, error)
	queries    []broker.StreamQueryInfo
	stats      broker.StreamStats
}

func (f *fakeBackend) StreamRegister(req broker.StreamQueryRequest) (broker.StreamQueryResult, error) {
	f.record("StreamRegister")
	f.streams.registerReq = req
	if f.streams.onRegister != nil {
		return f.streams.onRegister(req)
	}
	return broker.StreamQueryResult{}, nil
}

func (f *fakeBackend) StreamCycle(req broker.StreamCycleRequest) (broker.StreamCycleResult, error) {
	f.record("StreamCycle")
	f.streams.cycleReq = req
	if f.streams.onCycle != nil {
		return f.streams.onCycle(req)
	}
	return broker.StreamCycleResult{Success: true}, nil
}

func (f *fakeBackend) StreamState(req broker.StreamStateRequest) ([]broker.StreamStateRow, error) {
	f.record("StreamState")
	f.streams.stateReq = req
	if f.streams.onState != nil {
		return f.streams.onState(req)
	}
	return nil, nil
}

func (f *fakeBackend) StreamQueries() []broker.StreamQueryInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams.queries
}

func (f *fakeBackend) StreamStats() broker.StreamStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams.stats
}
