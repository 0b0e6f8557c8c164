package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/vfs"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func register(t *testing.T, b *Broker, name, src, sink, hash string, reset bool) StreamQueryResult {
	t.Helper()
	r, err := b.StreamRegister(StreamQueryRequest{Name: name, SourceQueue: src, SinkQueue: sink, ConfigHash: hash, Reset: reset})
	require.NoError(t, err)
	return r
}

func upsertOp(key, val string) StreamStateOp {
	return StreamStateOp{Type: "upsert", Key: key, Value: []byte(val)}
}

func stateOf(t *testing.T, b *Broker, qid, pid string) map[string]string {
	t.Helper()
	rows, err := b.StreamState(StreamStateRequest{QueryID: qid, PartitionID: pid})
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rows {
		out[r.Key] = string(r.Value)
	}
	return out
}

// spec 10, Queen's streams_register_query_v1.
func TestStreamRegister(t *testing.T) {
	e := newEnv(t)
	first := register(t, e.b, "sum", "src", "sink", "h1", false)
	assert.True(t, first.Fresh)
	assert.False(t, first.Reset)
	assert.Len(t, first.QueryID, 36)

	again := register(t, e.b, "sum", "src", "sink2", "h1", false)
	assert.Equal(t, StreamQueryResult{QueryID: first.QueryID, Name: "sum", ConfigHash: "h1"}, again, "same name and hash: same id, fresh:false")
	assert.Equal(t, "sink2", e.b.StreamQueries()[0].SinkQueue, "the sink queue is updated")

	_, err := e.b.StreamRegister(StreamQueryRequest{Name: "sum", SourceQueue: "src", ConfigHash: "h2"})
	require.ErrorIs(t, err, ErrConflict)
	assert.Equal(t, "config_hash mismatch: operator chain changed for queryId 'sum'. Pass reset:true to wipe existing state, or use a new queryId.", err.Error())

	reset := register(t, e.b, "sum", "src", "", "h2", true)
	assert.Equal(t, StreamQueryResult{QueryID: first.QueryID, Name: "sum", ConfigHash: "h2", Reset: true}, reset)

	for _, req := range []StreamQueryRequest{{SourceQueue: "s", ConfigHash: "h"}, {Name: "n", ConfigHash: "h"}, {Name: "n", SourceQueue: "s"},
		{Name: string(make([]byte, 256)), SourceQueue: "s", ConfigHash: "h"}} {
		_, err := e.b.StreamRegister(req)
		assert.ErrorIs(t, err, ErrBadRequest, "%+v", req)
	}
	e.reopen()
	qs := e.b.StreamQueries()
	require.Len(t, qs, 1)
	assert.Equal(t, "h2", qs[0].ConfigHash, "registrations are durable")
	assert.Equal(t, first.QueryID, qs[0].QueryID)
}

// cycleEnv has a registered query and three messages popped from its source.
type cycleEnv struct {
	*env
	qid string
	res PopResult
}

func newCycleEnv(t *testing.T) cycleEnv {
	e := newEnv(t)
	e.push("src", "p", "m1", "m2", "m3")
	q := register(t, e.b, "q", "src", "sink", "h", false)
	res := e.pop(PopRequest{Queue: "src", Group: "g", Batch: 3})
	require.Len(t, res.Messages, 3)
	return cycleEnv{env: e, qid: q.QueryID, res: res}
}

func (c cycleEnv) cycle(req StreamCycleRequest) StreamCycleResult {
	c.t.Helper()
	if req.QueryID == "" {
		req.QueryID = c.qid
	}
	if req.PartitionID == "" {
		req.PartitionID = c.res.PartitionID
	}
	r, err := c.b.StreamCycle(req)
	require.NoError(c.t, err)
	return r
}

func (c cycleEnv) cursorOf(group string) uint64 {
	id, _ := parseID(c.res.PartitionID)
	st, _ := c.b.cur.Get(cursor.Key{Partition: id, Group: group})
	return st.Committed
}

func TestStreamCycleCommitsStatePushAndAck(t *testing.T) {
	c := newCycleEnv(t)
	r := c.cycle(StreamCycleRequest{Group: "g", ReleaseLease: true,
		StateOps: []StreamStateOp{upsertOp("sum", `{"total":6}`), upsertOp("tmp", `1`), {Type: "upsert", Key: "empty"}},
		Push:     []PushItem{{Queue: "sink", Partition: "k", TransactionID: "out-1", Payload: []byte(`{"total":6}`)}},
		Ack:      &StreamAck{TransactionID: "m3", LeaseID: c.res.LeaseID, Status: "completed"}})
	require.True(t, r.Success, r.Error)
	assert.Equal(t, "src", r.QueueName)
	assert.Equal(t, 3, r.StateOpsApplied)
	require.Len(t, r.PushResults, 1)
	assert.Equal(t, PushQueued, r.PushResults[0].Status)
	assert.Equal(t, "out-1", r.PushResults[0].TransactionID)
	assert.Equal(t, &StreamAckResult{Success: true, Count: 1, LeaseReleased: true}, r.Ack)
	assert.Equal(t, map[string]string{"sum": `{"total":6}`, "tmp": `1`, "empty": `{}`}, stateOf(t, c.b, c.qid, c.res.PartitionID))
	assert.Empty(t, c.pop(PopRequest{Queue: "src", Group: "g"}).Messages, "the acked span is done")
	assert.Equal(t, []string{"out-1"}, txids(c.pop(PopRequest{Queue: "sink", AutoAck: true})))

	r = c.cycle(StreamCycleRequest{Group: "g", StateOps: []StreamStateOp{{Type: "delete", Key: "tmp"}, {Type: "delete", Key: "never"}},
		Push: []PushItem{{Queue: "sink", Partition: "k", TransactionID: "out-1", Payload: []byte(`1`)}},
		Ack:  &StreamAck{TransactionID: "m1", Status: "completed", Count: 3}})
	require.True(t, r.Success, r.Error)
	assert.Equal(t, 2, r.StateOpsApplied, "a delete of an absent key still counts")
	assert.Equal(t, PushDuplicate, r.PushResults[0].Status, "dedup by transactionId as /push")
	assert.Equal(t, &StreamAckResult{Success: true, Count: 3}, r.Ack, "spec 11 #13: an ack below the cursor is a no-op success")
	assert.Equal(t, uint64(3), c.cursorOf("g"))

	rows, err := c.b.StreamState(StreamStateRequest{QueryID: c.qid, PartitionID: c.res.PartitionID, Keys: []string{"sum", "x"}})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, c.clk.Now().UnixMicro(), rows[0].UpdatedAtMicros)
	qs := c.b.StreamQueries()
	require.Len(t, qs, 1)
	assert.Equal(t, StreamQueryInfo{QueryID: c.qid, Name: "q", SourceQueue: "src", SinkQueue: "sink", ConfigHash: "h",
		CreatedAtMicros: qs[0].CreatedAtMicros, UpdatedAtMicros: qs[0].UpdatedAtMicros, Shards: 1, Keys: 2,
		StateBytes: int64(len(`sum{"total":6}`) + len(`empty{}`)), Cycles: 2}, qs[0])
	assert.Equal(t, StreamStats{Queries: 1, Cycles: 2, StateKeys: 2, StateBytes: qs[0].StateBytes}, c.b.StreamStats())
}

// A failed cycle is success:false with nothing applied: no state, no push
// (not even the sink queue), no cursor move.
func TestStreamCycleFailureAppliesNothing(t *testing.T) {
	cases := []struct {
		name string
		req  func(c cycleEnv) StreamCycleRequest
		err  string
	}{
		{"unknown state op", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{StateOps: []StreamStateOp{{Type: "merge", Key: "k"}}}
		}, "Unknown state_op type: merge"},
		{"unknown ack status", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{Ack: &StreamAck{TransactionID: "m1", Status: "retry"}}
		}, "Unknown ack.status: retry"},
		{"ack without transactionId", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{Ack: &StreamAck{Status: "completed"}}
		}, "ack.transactionId is required"},
		{"message not found", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{Ack: &StreamAck{TransactionID: "nope"}}
		}, "Message not found"},
		{"invalid lease", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{Ack: &StreamAck{TransactionID: "m2", LeaseID: uuidString(newV7())}}
		}, "Invalid or expired lease"},
		{"expired lease", func(c cycleEnv) StreamCycleRequest {
			c.clk.Advance(time.Hour)
			return StreamCycleRequest{Ack: &StreamAck{TransactionID: "m2", LeaseID: c.res.LeaseID}}
		}, "Invalid or expired lease"},
		{"unknown query", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{QueryID: uuidString(newV7())}
		}, "Query not found: "},
		{"unknown partition", func(c cycleEnv) StreamCycleRequest {
			return StreamCycleRequest{PartitionID: "p"}
		}, "Partition not found: p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCycleEnv(t)
			req := tc.req(c)
			req.Group = "g"
			req.StateOps = append(req.StateOps, upsertOp("k", `1`))
			req.Push = []PushItem{{Queue: "sinkq", TransactionID: "o", Payload: []byte(`1`)}}
			r := c.cycle(req)
			assert.False(t, r.Success)
			assert.Contains(t, r.Error, tc.err)
			assert.Nil(t, r.Ack)
			assert.Empty(t, stateOf(t, c.b, c.qid, c.res.PartitionID))
			assert.Nil(t, c.b.lookupQueue("sinkq"), "no sink queue")
			assert.Zero(t, c.cursorOf("g"))
			assert.Equal(t, uint64(1), c.b.StreamStats().FailedCycles)
			assert.Zero(t, c.b.StreamStats().Cycles)
		})
	}
}

func TestStreamCycleLimitsAreBadRequests(t *testing.T) {
	c := newCycleEnv(t)
	big := make([]byte, MaxStreamValueBytes+1)
	for _, req := range []StreamCycleRequest{
		{QueryID: c.qid},
		{PartitionID: c.res.PartitionID},
		{QueryID: c.qid, PartitionID: c.res.PartitionID, StateOps: []StreamStateOp{{Type: "upsert", Key: string(make([]byte, MaxStreamKeyBytes+1))}}},
		{QueryID: c.qid, PartitionID: c.res.PartitionID, StateOps: []StreamStateOp{{Type: "upsert", Key: "k", Value: big}}},
		{QueryID: c.qid, PartitionID: c.res.PartitionID, StateOps: make([]StreamStateOp, MaxStreamOpsPerCycle+1)},
	} {
		_, err := c.b.StreamCycle(req)
		assert.ErrorIs(t, err, ErrBadRequest)
	}
	_, err := c.b.StreamState(StreamStateRequest{QueryID: c.qid})
	assert.ErrorIs(t, err, ErrBadRequest)
}

// A shard's keys and values are bounded in bytes too (the store holds them in
// memory): a cycle that would pass MaxStreamShardBytes is a 400 and applies
// nothing; one that stays under it applies.
func TestStreamCycleShardBytesLimit(t *testing.T) {
	c := newCycleEnv(t)
	value := make([]byte, MaxStreamValueBytes)
	for i := range value {
		value[i] = '1'
	}
	n := MaxStreamShardBytes/MaxStreamValueBytes + 1 // one value too many
	ops := make([]StreamStateOp, n)
	for i := range ops {
		ops[i] = StreamStateOp{Type: "upsert", Key: fmt.Sprintf("k%03d", i), Value: value}
	}
	_, err := c.b.StreamCycle(StreamCycleRequest{QueryID: c.qid, PartitionID: c.res.PartitionID, StateOps: ops})
	require.ErrorIs(t, err, ErrBadRequest)
	assert.Contains(t, err.Error(), "bytes of keys and values in the shard")
	rows, err := c.b.StreamState(StreamStateRequest{QueryID: c.qid, PartitionID: c.res.PartitionID})
	require.NoError(t, err)
	assert.Empty(t, rows)

	res, err := c.b.StreamCycle(StreamCycleRequest{QueryID: c.qid, PartitionID: c.res.PartitionID, StateOps: ops[:n-8]})
	require.NoError(t, err)
	assert.True(t, res.Success, res.Error)
	assert.Equal(t, n-8, res.StateOpsApplied)
}

// release_lease:false keeps the lease: nothing is served until it expires,
// then the unacked tail comes again, in order.
func TestStreamCycleKeepLeaseRedeliversTheTail(t *testing.T) {
	c := newCycleEnv(t)
	r := c.cycle(StreamCycleRequest{Group: "g", ReleaseLease: false, Ack: &StreamAck{TransactionID: "m1", LeaseID: c.res.LeaseID}})
	require.True(t, r.Success, r.Error)
	assert.Equal(t, &StreamAckResult{Success: true, Count: 1}, r.Ack)
	assert.Equal(t, uint64(1), c.cursorOf("g"))
	assert.Empty(t, c.pop(PopRequest{Queue: "src", Group: "g"}).Messages, "the lease is still held")
	c.clk.Advance(time.Hour)
	assert.Equal(t, []string{"m2", "m3"}, txids(c.pop(PopRequest{Queue: "src", Group: "g"})))
}

// A cycle sent again after it committed (its answer lost, or its worker's
// lease ran out while another worker went on) carries a lease that is no
// longer live: it is refused, so its state ops and pushes are not applied a
// second time over newer state. Under the live lease, an ack at or below
// the cursor stays a no-op success (spec 11 #13).
func TestStreamCycleReplayWithAStaleLeaseAppliesNothing(t *testing.T) {
	c := newCycleEnv(t)
	first := StreamCycleRequest{Group: "g", ReleaseLease: true, StateOps: []StreamStateOp{upsertOp("sum", `3`)},
		Push: []PushItem{{Queue: "sink", Payload: []byte(`3`)}},
		Ack:  &StreamAck{TransactionID: "m3", LeaseID: c.res.LeaseID}}
	r := c.cycle(first)
	require.True(t, r.Success, r.Error)

	r = c.cycle(first) // the same body again: its lease was released
	assert.False(t, r.Success)
	assert.Equal(t, "Invalid or expired lease", r.Error)

	c.push("src", "p", "m4")
	next := c.pop(PopRequest{Queue: "src", Group: "g"})
	require.Equal(t, []string{"m4"}, txids(next))
	r = c.cycle(StreamCycleRequest{Group: "g", ReleaseLease: false, StateOps: []StreamStateOp{upsertOp("sum", `4`)},
		Push: []PushItem{{Queue: "sink", Payload: []byte(`4`)}},
		Ack:  &StreamAck{TransactionID: "m4", LeaseID: next.LeaseID}})
	require.True(t, r.Success, r.Error)

	r = c.cycle(first) // while another lease is live
	assert.False(t, r.Success)
	assert.Equal(t, "Invalid or expired lease", r.Error)
	assert.Equal(t, map[string]string{"sum": `4`}, stateOf(t, c.b, c.qid, c.res.PartitionID), "the newer state stays")
	sink := c.pop(PopRequest{Queue: "sink", AutoAck: true, Batch: 10})
	require.Len(t, sink.Messages, 2, "one push per committed cycle")

	r = c.cycle(StreamCycleRequest{Group: "g", ReleaseLease: false, Ack: &StreamAck{TransactionID: "m3", LeaseID: next.LeaseID}})
	require.True(t, r.Success, r.Error)
	assert.Equal(t, &StreamAckResult{Success: true, Count: 1}, r.Ack, "below the cursor under the live lease: a no-op")
	assert.Equal(t, uint64(4), c.cursorOf("g"))
	assert.Equal(t, uint64(2), c.b.StreamStats().FailedCycles)
}

// The ack's message is looked up in the leased span first (cycleAckOffset)
// and in the whole partition otherwise; both find the same offsets.
func TestStreamCycleAckInsideAndOutsideTheLeasedSpan(t *testing.T) {
	cases := []struct {
		name    string
		ack     string
		lease   bool   // send the pop's leaseId
		cursor  uint64 // the group's cursor after the cycle
		success bool
	}{
		{"the span's last message", "m2", true, 2, true},
		{"the span's first message", "m1", true, 1, true},
		{"past the span, no leaseId: the partition's lookup", "m3", false, 3, true},
		{"pushed after the pop", "m4", false, 4, true},
		{"nowhere", "m9", true, 0, false},
	}
	for _, forget := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/pop's ids dropped=%v", tc.name, forget), func(t *testing.T) {
				cycleAckCase(t, tc.ack, tc.lease, tc.cursor, tc.success, forget)
			})
		}
	}
}

// cycleAckCase is one case of TestStreamCycleAckInsideAndOutsideTheLeasedSpan;
// with forget, the ids the pop remembered are dropped first (as when the
// broker's budget for them is spent), so the span is read.
func cycleAckCase(t *testing.T, ack string, withLease bool, wantCursor uint64, wantSuccess, forget bool) {
	e := newEnv(t)
	e.push("src", "p", "m1", "m2", "m3")
	q := register(t, e.b, "q", "src", "", "h", false)
	res := e.pop(PopRequest{Queue: "src", Group: "g", Batch: 2})
	require.Equal(t, []string{"m1", "m2"}, txids(res))
	e.push("src", "p", "m4")
	p := e.b.lookupPartitionByID(mustID(t, res.PartitionID))
	if forget {
		p.mu.Lock()
		p.forgetClaimedLocked(&e.b.claimed, "g")
		p.mu.Unlock()
	}
	a := &StreamAck{TransactionID: ack}
	if withLease {
		a.LeaseID = res.LeaseID
	}
	r, err := e.b.StreamCycle(StreamCycleRequest{QueryID: q.QueryID, PartitionID: res.PartitionID, Group: "g", ReleaseLease: true, Ack: a})
	require.NoError(t, err)
	assert.Equal(t, wantSuccess, r.Success, r.Error)
	st, _ := e.b.cur.Get(cursor.Key{Partition: p.id, Group: "g"})
	assert.Equal(t, wantCursor, st.Committed)
	if wantSuccess {
		assert.Zero(t, e.b.claimed.used.Load(), "the released lease's remembered ids are gone")
	}
}

func TestStreamCycleFailedAckGoesToTheDLQ(t *testing.T) {
	c := newCycleEnv(t)
	r := c.cycle(StreamCycleRequest{Group: "g", ReleaseLease: false, Ack: &StreamAck{TransactionID: "m2", Status: "failed"}})
	require.True(t, r.Success, r.Error)
	assert.Equal(t, &StreamAckResult{Success: true, Count: 1, LeaseReleased: true, DLQ: true}, r.Ack)
	assert.Equal(t, uint64(2), c.cursorOf("g"))
	dlq, n, err := listDLQ(c.b, dlqFilter{Queue: "src"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, "m2", dlq[0].TransactionID)
	assert.Equal(t, streamDLQError, dlq[0].ErrorMessage)
	assert.Equal(t, []string{"m3"}, txids(c.pop(PopRequest{Queue: "src", Group: "g"})), "the lease was cleared")
}

func TestStreamStateSurvivesReopen(t *testing.T) {
	c := newCycleEnv(t)
	c.cycle(StreamCycleRequest{Group: "g", StateOps: []StreamStateOp{upsertOp("a", `1`)}})
	require.NoError(t, c.b.flushPass())
	c.cycle(StreamCycleRequest{Group: "g", StateOps: []StreamStateOp{upsertOp("b", `2`)}})
	c.reopen()
	assert.Equal(t, map[string]string{"a": `1`, "b": `2`}, stateOf(t, c.b, c.qid, c.res.PartitionID))
	c.crashAndOpen()
	assert.Equal(t, map[string]string{"a": `1`, "b": `2`}, stateOf(t, c.b, c.qid, c.res.PartitionID))
	assert.Equal(t, uint64(2), c.b.StreamQueries()[0].Cycles)
}

func (e *env) crashAndOpen() {
	e.t.Helper()
	e.crash()
	e.open()
}

// memStreams is a broker on the crash-simulating Mem twin with a query and
// three messages popped from its source.
type memStreams struct {
	t   *testing.T
	mem *vfs.Mem
	clk *testClock
	b   *Broker
	qid string
	pid string
	res PopResult
}

func openMem(t *testing.T, mem *vfs.Mem, clk *testClock) *Broker {
	t.Helper()
	b, err := Open(Config{DataDir: "/data", FS: mem, Logger: zerolog.Nop(), Now: clk.Now, FlushInterval: time.Hour, CommitLogFileBytes: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func newMemStreams(t *testing.T) *memStreams {
	m := &memStreams{t: t, mem: vfs.NewMem(), clk: newTestClock()}
	m.b = openMem(t, m.mem, m.clk)
	_, err := m.b.Push([]PushItem{{Queue: "src", Partition: "p", TransactionID: "m1", Payload: []byte("1")},
		{Queue: "src", Partition: "p", TransactionID: "m2", Payload: []byte("2")}})
	require.NoError(t, err)
	m.qid = register(t, m.b, "q", "src", "sink", "h", false).QueryID
	m.res, err = m.b.Pop(context.Background(), PopRequest{Queue: "src", Group: "g", Batch: 2})
	require.NoError(t, err)
	m.pid = m.res.PartitionID
	return m
}

func (m *memStreams) cycle(key, val, ackTx string) (StreamCycleResult, error) {
	req := StreamCycleRequest{QueryID: m.qid, PartitionID: m.pid, Group: "g", ReleaseLease: true,
		StateOps: []StreamStateOp{upsertOp(key, val)},
		Push:     []PushItem{{Queue: "sink", TransactionID: "out-" + key + val, Payload: []byte(val)}}}
	if ackTx != "" {
		req.Ack = &StreamAck{TransactionID: ackTx}
	}
	return m.b.StreamCycle(req)
}

// crash opens what a power loss now would leave.
func (m *memStreams) crash() {
	m.mem = m.mem.Crash(true)
	m.b = openMem(m.t, m.mem, m.clk)
}

func (m *memStreams) sink() []string {
	res, err := m.b.Pop(context.Background(), PopRequest{Queue: "sink", Batch: 10, AutoAck: true})
	require.NoError(m.t, err)
	return txids(res)
}

// Crash after the commit point, before anything is materialized: Open
// finishes the whole cycle (state, push, cursor) from the Tx entry.
func TestStreamCycleCrashAfterCommitPoint(t *testing.T) {
	m := newMemStreams(t)
	m.b.hooks.afterTxCommitPoint = func() error { return errTxInjected }
	_, err := m.cycle("k", "1", "m1")
	require.ErrorIs(t, err, errTxInjected)
	m.crash()
	assert.Equal(t, map[string]string{"k": "1"}, stateOf(t, m.b, m.qid, m.pid))
	assert.Equal(t, []string{"out-k1"}, m.sink())
	id, _ := parseID(m.pid)
	st, _ := m.b.cur.Get(cursor.Key{Partition: id, Group: "g"})
	assert.Equal(t, uint64(1), st.Committed)
}

// Crash after a snapshot, with later cycles only in the commit log, and a
// crash in the middle of the next snapshot's write (its temporary file torn):
// the snapshot plus the replay give every committed cycle once.
func TestStreamStateAcrossSnapshotsAndCrashes(t *testing.T) {
	m := newMemStreams(t)
	r, err := m.cycle("a", "1", "m1")
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)
	require.NoError(t, m.b.flushPass())
	r, err = m.cycle("a", "2", "m2")
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)
	m.crash()
	assert.Equal(t, map[string]string{"a": "2"}, stateOf(t, m.b, m.qid, m.pid))
	assert.Equal(t, []string{"out-a1", "out-a2"}, m.sink())

	r, err = m.cycle("b", "3", "")
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)
	qid, _ := parseID(m.qid)
	pid, _ := parseID(m.pid)
	path := m.b.streams.files.ShardPath(streams.ShardKey{Query: qid, Partition: pid})
	m.mem.SetBytes(path+".tmp", []byte("CSSN torn")) // a snapshot write cut short
	m.crash()
	assert.Equal(t, map[string]string{"a": "2", "b": "3"}, stateOf(t, m.b, m.qid, m.pid))
	_, err = m.mem.ReadFile(path + ".tmp")
	assert.Error(t, err, "the torn temporary file was removed")
	assert.Equal(t, uint64(3), m.b.StreamQueries()[0].Cycles)
}

// A damaged snapshot makes Open fail (it may be the only copy of the state).
func TestStreamDamagedSnapshotFailsOpen(t *testing.T) {
	m := newMemStreams(t)
	_, err := m.cycle("a", "1", "")
	require.NoError(t, err)
	require.NoError(t, m.b.flushPass())
	qid, _ := parseID(m.qid)
	pid, _ := parseID(m.pid)
	path := m.b.streams.files.ShardPath(streams.ShardKey{Query: qid, Partition: pid})
	crashed := m.mem.Crash(true)
	b := crashed.Bytes(path)
	b[len(b)-1] ^= 1
	crashed.SetBytes(path, b)
	_, err = Open(Config{DataDir: "/data", FS: crashed, Logger: zerolog.Nop(), Now: m.clk.Now})
	var fe *streams.FileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, path, fe.File)
}

// Disk grows with live keys, not with updates: 10,000 upserts of one key
// leave one small snapshot, and the commit log is truncated behind it.
func TestStreamCompaction(t *testing.T) {
	m := newMemStreams(t)
	for i := range 10_000 {
		r, err := m.b.StreamCycle(StreamCycleRequest{QueryID: m.qid, PartitionID: m.pid,
			StateOps: []StreamStateOp{upsertOp("counter", fmt.Sprint(i))}})
		require.NoError(t, err)
		require.True(t, r.Success, r.Error)
	}
	require.NoError(t, m.b.flushPass())
	qid, _ := parseID(m.qid)
	pid, _ := parseID(m.pid)
	snap := m.mem.Bytes(m.b.streams.files.ShardPath(streams.ShardKey{Query: qid, Partition: pid}))
	assert.Less(t, len(snap), 100, "one key: %d bytes", len(snap))
	t.Logf("10,000 upserts of one key: a %d-byte snapshot, %d bytes retained in the commit log", len(snap), m.b.wal.RetainedBytes())
	assert.Less(t, m.b.wal.RetainedBytes(), int64(64<<10), "the commit log (64 KiB files) was truncated behind the snapshot")
	m.crash()
	assert.Equal(t, map[string]string{"counter": "9999"}, stateOf(t, m.b, m.qid, m.pid))
	assert.Equal(t, uint64(10_000), m.b.StreamQueries()[0].Cycles)
}

// Deleting the source queue removes its partitions' shards and their files;
// the query stays registered. A reset wipes every shard of the query, also
// after a crash.
func TestStreamRemoval(t *testing.T) {
	m := newMemStreams(t)
	_, err := m.cycle("a", "1", "")
	require.NoError(t, err)
	require.NoError(t, m.b.flushPass())
	dir := filepath.Join("/data", streams.Dir, m.qid)
	names, err := m.mem.List(dir)
	require.NoError(t, err)
	require.Len(t, names, 1)

	register(t, m.b, "q", "src", "sink", "h2", true)
	assert.Empty(t, stateOf(t, m.b, m.qid, m.pid))
	_, err = m.mem.List(dir)
	assert.Error(t, err, "the reset removed the query's files")
	_, err = m.cycle("b", "2", "")
	require.NoError(t, err)
	m.crash()
	assert.Equal(t, map[string]string{"b": "2"}, stateOf(t, m.b, m.qid, m.pid), "the reset survives; the later cycle too")

	require.NoError(t, m.b.flushPass())
	found, err := m.b.DeleteQueue("src")
	require.NoError(t, err)
	require.True(t, found)
	assert.Empty(t, stateOf(t, m.b, m.qid, m.pid))
	_, err = m.mem.List(dir)
	assert.Error(t, err, "the queue's shards were removed")
	assert.Len(t, m.b.StreamQueries(), 1, "the query stays registered")
	m.crash()
	assert.Empty(t, stateOf(t, m.b, m.qid, m.pid))
	assert.Equal(t, "h2", m.b.StreamQueries()[0].ConfigHash)
}

// A flush pass holds the registration lock shared: it writes the queries
// file while a cycle is in flight (a cycle holds the lock shared from its
// query lookup to its apply) instead of waiting for it, which stalled every
// cycle queued behind the pass.
func TestStreamFlushPassDoesNotWaitForCycles(t *testing.T) {
	m := newMemStreams(t)
	m.b.streams.regMu.RLock() // a cycle in flight
	flushed := make(chan error, 1)
	go func() { flushed <- m.b.flushPass() }()
	select {
	case err := <-flushed:
		m.b.streams.regMu.RUnlock()
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		m.b.streams.regMu.RUnlock()
		t.Fatal("the flush pass waited for the cycle in flight")
	}
	body, err := streams.RegistryFormat.ReadFile(m.mem, filepath.Join("/data", streams.Dir, streams.RegistryFile))
	require.NoError(t, err)
	r, err := streams.DecodeRegistry(body)
	require.NoError(t, err)
	require.Len(t, r.Queries, 1)
	assert.Equal(t, m.qid, uuidString(r.Queries[0].ID), "the registration is in the file")
}

// Cycles on several shards at once, with flush passes truncating the log
// meanwhile: after a crash every shard holds its last committed value.
func TestStreamConcurrentCyclesAndFlushes(t *testing.T) {
	m := newMemStreams(t)
	var pids []string
	for i := range 4 {
		res, err := m.b.Push([]PushItem{{Queue: "src", Partition: fmt.Sprint("c", i), TransactionID: "x", Payload: []byte("1")}})
		require.NoError(t, err)
		pids = append(pids, res[0].PartitionID)
	}
	done := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		var err error
		for {
			select {
			case <-done:
				flushed <- err
				return
			default:
			}
			if e := m.b.flushPass(); e != nil && err == nil {
				err = e
			}
		}
	}()
	errs := make(chan error, len(pids))
	for _, pid := range pids {
		go func() {
			for i := range 200 {
				r, err := m.b.StreamCycle(StreamCycleRequest{QueryID: m.qid, PartitionID: pid,
					StateOps: []StreamStateOp{upsertOp("n", fmt.Sprint(i))}})
				if err == nil && !r.Success {
					err = fmt.Errorf("cycle failed: %s", r.Error)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range pids {
		require.NoError(t, <-errs)
	}
	close(done)
	require.NoError(t, <-flushed)
	m.crash()
	for _, pid := range pids {
		assert.Equal(t, map[string]string{"n": "199"}, stateOf(t, m.b, m.qid, pid))
	}
}
