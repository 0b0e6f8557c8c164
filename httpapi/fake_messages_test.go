package httpapi

import (
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// The message and trace routes are tested against the real broker (messages_test.go); the
// fake only records the calls and answers empty.

func (f *fakeBackend) Messages(report.MessageFilter) (report.MessageList, error) {
	f.record("Messages")
	return report.MessageList{}, nil
}

func (f *fakeBackend) Message(string, string) (report.MessageDetail, error) {
	f.record("Message")
	return report.MessageDetail{}, broker.NotFound("Message not found")
}

func (f *fakeBackend) DeleteMessage(string, string) (bool, error) {
	f.record("DeleteMessage")
	return false, nil
}

func (f *fakeBackend) AddTrace(broker.TraceRequest) (string, error) {
	f.record("AddTrace")
	return "", broker.NotFound("Message not found")
}

func (f *fakeBackend) Traces(string, string) ([]broker.TraceEvent, error) {
	f.record("Traces")
	return nil, nil
}

func (f *fakeBackend) TracesByName(string, int, int) ([]broker.TraceEvent, int, error) {
	f.record("TracesByName")
	return nil, 0, nil
}

func (f *fakeBackend) TraceNames(int, int) ([]broker.TraceName, int, error) {
	f.record("TraceNames")
	return nil, 0, nil
}
