package httpapi

import (
	"context"
	"sync"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

// fakeBackend is the in-memory twin of *broker.Broker for the HTTP layer's tests: it records
// every call and answers with canned results, so a test can assert both what the HTTP layer
// parsed and exactly what it encodes. Hooks left nil give a plain successful answer.
type fakeBackend struct {
	mu      sync.Mutex
	calls   []string
	healthy bool
	repl    *broker.ReplicationStatus // nil: a single node

	pushed    []broker.PushItem
	popReq    broker.PopRequest
	ackGroup  string
	acked     []broker.AckItem
	txOps     []broker.TxOp
	configReq broker.ConfigureRequest
	extendID  string
	extendSec int64
	seekArgs  []any
	delArgs   []any
	dlqFilter report.DLQFilter

	onPush      func([]broker.PushItem) ([]broker.PushResult, error)
	onPop       func(context.Context, broker.PopRequest) (broker.PopResult, error)
	onAck       func(string, []broker.AckItem) ([]broker.AckResult, error)
	onTx        func([]broker.TxOp) (broker.TxResult, error)
	onConfigure func(broker.ConfigureRequest) (broker.ConfigureResult, error)
	streams     fakeStreams // fake_streams_test.go
	extendRes   broker.ExtendResult
	seekRes     broker.SeekResult
	pseekRes    broker.PartitionSeekResult
	deleteErr   error
	deletedN    int
	existed     bool
	dlqEntries  []report.DLQEntry
	dlqTotal    int
	groups      []report.GroupSummary
	stats       broker.Stats
	storage     report.StorageStatus
	damaged     []broker.DamagedPartition
	noSpace     *broker.NoSpaceState
	ckptFail    *broker.CheckpointFailure
	detail      []report.GroupPartition
	lagging     []report.LaggingPartition
	lagArg      int64
	subArgs     []any
	subN        int
	subErr      error
	maint       broker.MaintenanceStatus
	maintErr    error
	overview    report.ResourceOverview
	resQueues   []report.ResourceQueue
	resPage     report.PartitionPage
	resFilter   report.ResourceFilter
	resDetail   map[string]report.ResourceQueueDetail
	namespaces  []report.ResourceLabel
	tasks       []report.ResourceLabel

	// missingQueues are the queues QueueExists says do not exist (all others do).
	missingQueues map[string]bool
}

func newFake() *fakeBackend { return &fakeBackend{healthy: true} }

func (f *fakeBackend) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeBackend) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeBackend) Healthy() bool { f.record("Healthy"); return f.healthy }

// setRepl sets what Replication answers. Under the lock: the test and a handler share it, and
// a response sent with writev (over 4 KiB, as /metrics/prometheus is) gives the race detector
// no happens-before edge with the client's read, as a write(2) does.
func (f *fakeBackend) setRepl(r *broker.ReplicationStatus) {
	f.mu.Lock()
	f.repl = r
	f.mu.Unlock()
}

func (f *fakeBackend) Replication() (broker.ReplicationStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.repl == nil {
		return broker.ReplicationStatus{}, false
	}
	return *f.repl, true
}

func (f *fakeBackend) CheckpointFailure() (broker.CheckpointFailure, bool) {
	f.record("CheckpointFailure")
	if f.ckptFail == nil {
		return broker.CheckpointFailure{}, false
	}
	return *f.ckptFail, true
}

func (f *fakeBackend) NoSpace() (broker.NoSpaceState, bool) {
	if f.noSpace == nil {
		return broker.NoSpaceState{}, false
	}
	return *f.noSpace, true
}

func (f *fakeBackend) Configure(req broker.ConfigureRequest) (broker.ConfigureResult, error) {
	f.record("Configure")
	f.configReq = req
	if f.onConfigure != nil {
		return f.onConfigure(req)
	}
	return broker.ConfigureResult{QueueID: "qid", PartitionID: "pid", Queue: req.Queue,
		Namespace: req.Namespace, Task: req.Task, Options: req.Options}, nil
}

func (f *fakeBackend) PushInto(_ []broker.PushResult, items []broker.PushItem) ([]broker.PushResult, error) {
	f.record("Push")
	f.pushed = append([]broker.PushItem(nil), items...) // items is reused after Push (Backend.Push)
	if f.onPush != nil {
		return f.onPush(items)
	}
	out := make([]broker.PushResult, len(items))
	for i, it := range items {
		out[i] = broker.PushResult{Status: broker.PushQueued, TransactionID: it.TransactionID,
			MessageID: "m", PartitionID: "p", Partition: it.Partition, Queue: it.Queue, TraceID: it.TraceID}
	}
	return out, nil
}

func (f *fakeBackend) QueueExists(name string) bool { return !f.missingQueues[name] }

func (f *fakeBackend) Pop(ctx context.Context, req broker.PopRequest) (broker.PopResult, error) {
	f.record("Pop")
	f.mu.Lock()
	f.popReq = req
	f.mu.Unlock()
	if f.onPop != nil {
		return f.onPop(ctx, req)
	}
	return broker.PopResult{}, nil
}

func (f *fakeBackend) AckInto(_ []broker.AckResult, group string, items []broker.AckItem) ([]broker.AckResult, error) {
	f.record("Ack")
	f.ackGroup, f.acked = group, append([]broker.AckItem(nil), items...) // items is reused after AckInto (Backend.AckInto)
	if f.onAck != nil {
		return f.onAck(group, items)
	}
	out := make([]broker.AckResult, len(items))
	for i, it := range items {
		out[i] = broker.AckResult{Index: i, TransactionID: it.TransactionID, Success: true}
	}
	return out, nil
}

func (f *fakeBackend) Transaction(ops []broker.TxOp) (broker.TxResult, error) {
	f.record("Transaction")
	f.txOps = ops
	if f.onTx != nil {
		return f.onTx(ops)
	}
	return broker.TxResult{TransactionID: "tx", Success: true}, nil
}

func (f *fakeBackend) ExtendLease(leaseID string, seconds int64) broker.ExtendResult {
	f.record("ExtendLease")
	f.extendID, f.extendSec = leaseID, seconds
	return f.extendRes
}

func (f *fakeBackend) Seek(group, queue string, toEnd bool, tsMicros int64) (broker.SeekResult, error) {
	f.record("Seek")
	f.seekArgs = []any{group, queue, toEnd, tsMicros}
	return f.seekRes, f.deleteErr
}

func (f *fakeBackend) SeekPartition(group, queue, partition string) (broker.PartitionSeekResult, error) {
	f.record("SeekPartition")
	f.seekArgs = []any{group, queue, partition}
	return f.pseekRes, f.deleteErr
}

func (f *fakeBackend) DeleteGroup(group, queue string, deleteMetadata bool) (int, error) {
	f.record("DeleteGroup")
	f.delArgs = []any{group, queue, deleteMetadata}
	return f.deletedN, f.deleteErr
}

func (f *fakeBackend) DeleteQueue(queue string) (bool, error) {
	f.record("DeleteQueue")
	f.delArgs = []any{queue}
	return f.existed, f.deleteErr
}

func (f *fakeBackend) DLQ(filter report.DLQFilter) ([]report.DLQEntry, int, error) {
	f.record("DLQ")
	f.dlqFilter = filter
	return f.dlqEntries, f.dlqTotal, nil
}

func (f *fakeBackend) ConsumerGroups() []report.GroupSummary {
	f.record("ConsumerGroups")
	return f.groups
}

func (f *fakeBackend) Stats() broker.Stats { f.record("Stats"); return f.stats }

func (f *fakeBackend) Storage() report.StorageStatus { f.record("Storage"); return f.storage }

func (f *fakeBackend) Damaged() []broker.DamagedPartition { f.record("Damaged"); return f.damaged }

func (f *fakeBackend) GroupDetail(group string) []report.GroupPartition {
	f.record("GroupDetail:" + group)
	return f.detail
}

func (f *fakeBackend) LaggingPartitions(minLagSeconds int64) []report.LaggingPartition {
	f.record("LaggingPartitions")
	f.lagArg = minLagSeconds
	return f.lagging
}

func (f *fakeBackend) SetSubscriptionTimestamp(group string, tsMicros int64) (int, error) {
	f.record("SetSubscriptionTimestamp")
	f.subArgs = []any{group, tsMicros}
	return f.subN, f.subErr
}

func (f *fakeBackend) Maintenance() broker.MaintenanceStatus { f.record("Maintenance"); return f.maint }

func (f *fakeBackend) SetPushMaintenance(on bool) (broker.MaintenanceStatus, error) {
	f.record("SetPushMaintenance")
	if f.maintErr == nil {
		f.maint.PushMaintenance = on
	}
	return f.maint, f.maintErr
}

func (f *fakeBackend) SetPopMaintenance(on bool) (broker.MaintenanceStatus, error) {
	f.record("SetPopMaintenance")
	if f.maintErr == nil {
		f.maint.PopMaintenance = on
	}
	return f.maint, f.maintErr
}

func (f *fakeBackend) ResourcesOverview() report.ResourceOverview {
	f.record("ResourcesOverview")
	return f.overview
}

func (f *fakeBackend) ResourceQueues(filter report.ResourceFilter) []report.ResourceQueue {
	f.record("ResourceQueues")
	f.mu.Lock()
	f.resFilter = filter
	f.mu.Unlock()
	return f.resQueues
}

func (f *fakeBackend) ResourceQueue(name string, page report.PartitionPage) (report.ResourceQueueDetail, bool) {
	f.record("ResourceQueue")
	f.mu.Lock()
	f.resPage = page
	f.mu.Unlock()
	d, ok := f.resDetail[name]
	return d, ok
}

func (f *fakeBackend) ResourceNamespaces() []report.ResourceLabel {
	f.record("ResourceNamespaces")
	return f.namespaces
}

func (f *fakeBackend) ResourceTasks() []report.ResourceLabel {
	f.record("ResourceTasks")
	return f.tasks
}
