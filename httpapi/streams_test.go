package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// The /streams/v1 wire against the fake: what the decoders hand the broker and the exact bytes
// the encoders answer (spec 10; the bodies are the ones Queen's Go and JS streams runtimes send).

func TestStreamRegisterWire(t *testing.T) {
	fake := newFake()
	fake.streams.onRegister = func(req broker.StreamQueryRequest) (broker.StreamQueryResult, error) {
		if req.ConfigHash == "h2" && !req.Reset {
			return broker.StreamQueryResult{}, broker.Conflict("query q1 is registered with another config_hash")
		}
		return broker.StreamQueryResult{QueryID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", Name: req.Name,
			ConfigHash: req.ConfigHash, Fresh: true, Reset: req.Reset}, nil
	}
	ts := startServer(t, fake, Config{})

	r := ts.do("POST", "/streams/v1/queries", `{"name":"q1","source_queue":"src","config_hash":"h1","reset":false}`)
	requireJSON(t, r, 200, `{"success":true,"query_id":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","name":"q1","config_hash":"h1","fresh":true,"reset":false}`)
	require.Equal(t, broker.StreamQueryRequest{Name: "q1", SourceQueue: "src", ConfigHash: "h1"}, fake.streams.registerReq)

	r = ts.do("POST", "/streams/v1/queries", `{"name":"q1","source_queue":"src","sink_queue":"out","config_hash":"h2"}`)
	requireJSON(t, r, 409, `{"success":false,"error":"query q1 is registered with another config_hash"}`)
	require.Equal(t, "out", fake.streams.registerReq.SinkQueue)

	r = ts.do("POST", "/streams/v1/queries", `{"name":"q1","source_queue":"src","config_hash":"h2","reset":true}`)
	requireJSON(t, r, 200, `{"success":true,"query_id":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","name":"q1","config_hash":"h2","fresh":true,"reset":true}`)

	for _, c := range []struct{ name, body, msg string }{
		{"spec 10: name required", `{"source_queue":"s","config_hash":"h"}`, "name is required"},
		{"spec 10: source_queue required", `{"name":"n","source_queue":"","config_hash":"h"}`, "source_queue is required"},
		{"spec 10: config_hash required", `{"name":"n","source_queue":"s"}`, "config_hash is required"},
		{"queue names obey spec 0.4", `{"name":"n","source_queue":"a/b","config_hash":"h"}`, "source_queue: Queue name must not contain '/'"},
		{"a wrong type is a 400", `{"name":1,"source_queue":"s","config_hash":"h"}`, "name must be a string"},
		{"reset is a boolean", `{"name":"n","source_queue":"s","config_hash":"h","reset":"yes"}`, "reset must be a boolean"},
		{"a body that is not an object", `[1]`, "request body must be a JSON object"},
		{"bad UTF-8 is refused, not replaced", "{\"name\":\"a\xff\",\"source_queue\":\"s\",\"config_hash\":\"h\"}", "name must be valid UTF-8"},
	} {
		r := ts.do("POST", "/streams/v1/queries", c.body)
		requireJSON(t, r, 400, `{"success":false,"error":`+string(appendString(nil, c.msg))+`}`)
	}
	r = ts.do("POST", "/streams/v1/queries", `{`)
	require.Equal(t, 400, r.status)
	require.Contains(t, string(r.body), `"error":"Invalid JSON: `)
}

func TestStreamCycleWire(t *testing.T) {
	fake := newFake()
	fake.streams.onCycle = func(req broker.StreamCycleRequest) (broker.StreamCycleResult, error) {
		return broker.StreamCycleResult{Success: true, QueryID: req.QueryID, PartitionID: req.PartitionID, QueueName: "src",
			StateOpsApplied: len(req.StateOps),
			PushResults: []broker.PushResult{{Status: broker.PushQueued, TransactionID: "s1", MessageID: "m1",
				PartitionID: "pp", Queue: "sink"}},
			Ack: &broker.StreamAckResult{Success: true, Count: req.Ack.Count, LeaseReleased: req.ReleaseLease}}, nil
	}
	ts := startServer(t, fake, Config{})

	// The JS runtime's body (cycle.js), a value of every JSON type.
	r := ts.do("POST", "/streams/v1/cycle", `{"query_id":"Q","partition_id":"P","consumer_group":"streams.q1",
	 "state_ops":[{"type":"upsert","key":"k1","value":{"acc":3,"windowEnd":10}},{"type":"upsert","key":"k2","value":7},
	  {"type":"upsert","key":"k3"},{"type":"delete","key":"k4"},{"type":"upsert","key":"k5","value":null}],
	 "push_items":[{"queue":"sink","partition":"p","payload":{"sum":3},"transactionId":"s1"}],
	 "ack":{"transactionId":"t9","leaseId":"L","status":"completed","count":4}}`)
	requireJSON(t, r, 200, `{"success":true,"query_id":"Q","partition_id":"P","queueName":"src","state_ops_applied":5,
	 "push_results":[{"index":0,"status":"queued","transaction_id":"s1","transactionId":"s1","message_id":"m1","messageId":"m1","partition_id":"pp","trace_id":null,"queueName":"sink"}],
	 "ack_result":{"success":true,"count":4,"lease_released":true,"dlq":false}}`)
	got := fake.streams.cycleReq
	require.Equal(t, broker.StreamCycleRequest{QueryID: "Q", PartitionID: "P", Group: "streams.q1",
		StateOps: []broker.StreamStateOp{
			{Type: "upsert", Key: "k1", Value: []byte(`{"acc":3,"windowEnd":10}`)},
			{Type: "upsert", Key: "k2", Value: []byte(`7`)},
			{Type: "upsert", Key: "k3", Value: []byte(`{}`)}, // absent value: {}
			{Type: "delete", Key: "k4"},
			{Type: "upsert", Key: "k5", Value: []byte(`null`)},
		},
		Push: []broker.PushItem{{Queue: "sink", Partition: "p", Payload: []byte(`{"sum":3}`), TransactionID: "s1"}},
		Ack:  &broker.StreamAck{TransactionID: "t9", LeaseID: "L", Status: "completed", Count: 4}, ReleaseLease: true}, got)

	// A window flush (both runtimes): no ack, release_lease false, null arrays, no group.
	fake.streams.onCycle = func(req broker.StreamCycleRequest) (broker.StreamCycleResult, error) {
		return broker.StreamCycleResult{Success: false, Error: "Unknown query_id", QueryID: req.QueryID, PartitionID: req.PartitionID}, nil
	}
	r = ts.do("POST", "/streams/v1/cycle", `{"query_id":"Q","partition_id":"P","state_ops":null,"push_items":null,"ack":null,"release_lease":false}`)
	requireJSON(t, r, 200, `{"success":false,"error":"Unknown query_id","query_id":"Q","partition_id":"P","queueName":"","state_ops_applied":0,"push_results":[],"ack_result":null}`)
	require.Equal(t, broker.StreamCycleRequest{QueryID: "Q", PartitionID: "P", StateOps: []broker.StreamStateOp{}, Push: []broker.PushItem{}}, fake.streams.cycleReq)

	fake.streams.onCycle = func(broker.StreamCycleRequest) (broker.StreamCycleResult, error) {
		return broker.StreamCycleResult{}, broker.BadRequest("state key longer than 1024 bytes")
	}
	r = ts.do("POST", "/streams/v1/cycle", `{"query_id":"Q","partition_id":"P"}`)
	requireJSON(t, r, 400, `{"success":false,"error":"state key longer than 1024 bytes"}`)

	n := len(fake.callList())
	for _, c := range []struct{ name, body, msg string }{
		{"spec 10: query_id required", `{"partition_id":"P"}`, "query_id is required"},
		{"spec 10: partition_id required", `{"query_id":"Q","partition_id":""}`, "partition_id is required"},
		{"query_id must be a string", `{"query_id":7,"partition_id":"P"}`, "query_id must be a string"},
		{"state_ops must be an array", `{"query_id":"Q","partition_id":"P","state_ops":{}}`, "state_ops must be an array"},
		{"a state op is an object", `{"query_id":"Q","partition_id":"P","state_ops":[1]}`, "each state op must be an object"},
		{"a key is a string", `{"query_id":"Q","partition_id":"P","state_ops":[{"type":"upsert","key":5}]}`, "state_ops[].key must be a string"},
		{"a push item obeys spec 1.2", `{"query_id":"Q","partition_id":"P","push_items":[{"queue":"a/b","payload":1}]}`, "Queue name must not contain '/'"},
		{"push_items must be an array", `{"query_id":"Q","partition_id":"P","push_items":{"queue":"s"}}`, "push_items must be an array"},
		{"a push item's queue is a string", `{"query_id":"Q","partition_id":"P","push_items":[{"queue":1}]}`, "Queue must be a string"},
		{"ack is an object", `{"query_id":"Q","partition_id":"P","ack":"t"}`, "ack must be an object or null"},
		{"ack.count is an integer", `{"query_id":"Q","partition_id":"P","ack":{"transactionId":"t","count":"2"}}`, "ack.count must be an integer"},
		{"ack.transactionId required", `{"query_id":"Q","partition_id":"P","ack":{"leaseId":"L"}}`, "ack.transactionId is required"},
		{"release_lease is a boolean", `{"query_id":"Q","partition_id":"P","release_lease":1}`, "release_lease must be a boolean"},
		{"the group obeys spec 0.4", `{"query_id":"Q","partition_id":"P","consumer_group":".."}`, "Consumer group name must not be '.' or '..'"},
		{"a value is UTF-8", "{\"query_id\":\"Q\",\"partition_id\":\"P\",\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\",\"value\":\"\xff\"}]}", "state_ops[0].value is not valid UTF-8"},
		{"a key is not replaced", "{\"query_id\":\"Q\",\"partition_id\":\"P\",\"state_ops\":[{\"type\":\"upsert\",\"key\":\"k\xff\"}]}", "state key must be valid UTF-8"},
		{"a state op has a key", `{"query_id":"Q","partition_id":"P","state_ops":[{"type":"upsert","key":"k"},{"type":"delete"}]}`, "state_ops[1].key is required"},
		{"a null key is no key", `{"query_id":"Q","partition_id":"P","state_ops":[{"type":"upsert","key":null,"value":1}]}`, "state_ops[0].key is required"},
	} {
		r := ts.do("POST", "/streams/v1/cycle", c.body)
		requireJSON(t, r, 400, `{"success":false,"error":`+string(appendString(nil, c.msg))+`}`)
	}
	require.Len(t, fake.callList(), n, "a 400 never reaches the broker")
	r = ts.do("POST", "/streams/v1/cycle", "")
	requireJSON(t, r, 400, `{"error":"Empty request body"}`)
}

// An op without a key is a 400 (above), but the key "" is a key like any other: Queen's state
// table takes it, and the runtimes could build it from an empty field.
func TestStreamCycleEmptyKeyIsAKey(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/streams/v1/cycle", `{"query_id":"Q","partition_id":"P","state_ops":[{"type":"upsert","key":"","value":1},{"type":"delete","key":""}]}`)
	require.Equal(t, 200, r.status)
	require.Equal(t, []broker.StreamStateOp{{Type: "upsert", Key: "", Value: []byte(`1`)}, {Type: "delete", Key: ""}},
		fake.streams.cycleReq.StateOps)
}

func TestStreamStateWire(t *testing.T) {
	fake := newFake()
	fake.streams.onState = func(req broker.StreamStateRequest) ([]broker.StreamStateRow, error) {
		rows := []broker.StreamStateRow{
			{Key: "w\x1f10\x1fa", Value: []byte(`{"acc":1,"windowStart":0,"windowEnd":10}`), UpdatedAtMicros: 1_700_000_000_123_456},
			{Key: "w\x1f20\x1fa", Value: []byte(`{"acc":2,"windowStart":10,"windowEnd":20}`), UpdatedAtMicros: 1_700_000_000_123_456},
			{Key: "n", Value: []byte(`5`), UpdatedAtMicros: 1_700_000_000_000_000},
		}
		out := rows[:0:0]
		for _, r := range rows {
			if req.Match == nil || req.Match(r.Value) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	ts := startServer(t, fake, Config{})

	// The Go runtime's GetState sends keys:null (a nil slice).
	r := ts.do("POST", "/streams/v1/state/get", `{"query_id":"Q","partition_id":"P","keys":null}`)
	requireJSON(t, r, 200, `{"success":true,"rows":[
	 {"key":"w\u001f10\u001fa","value":{"acc":1,"windowStart":0,"windowEnd":10},"updated_at":"2023-11-14T22:13:20.123Z"},
	 {"key":"w\u001f20\u001fa","value":{"acc":2,"windowStart":10,"windowEnd":20},"updated_at":"2023-11-14T22:13:20.123Z"},
	 {"key":"n","value":5,"updated_at":"2023-11-14T22:13:20.000Z"}]}`)
	require.Nil(t, fake.streams.stateReq.Match)

	// The idle flush: key_prefix plus ripe_at_or_before (epoch ms) keeps windowEnd <= 15 only.
	r = ts.do("POST", "/streams/v1/state/get", `{"query_id":"Q","partition_id":"P","keys":[],"key_prefix":"w\u001f","ripe_at_or_before":15}`)
	requireJSON(t, r, 200, `{"success":true,"rows":[{"key":"w\u001f10\u001fa","value":{"acc":1,"windowStart":0,"windowEnd":10},"updated_at":"2023-11-14T22:13:20.123Z"}]}`)
	require.Equal(t, "w\x1f", fake.streams.stateReq.KeyPrefix)
	require.Equal(t, []string{}, fake.streams.stateReq.Keys)

	r = ts.do("POST", "/streams/v1/state/get", `{"query_id":"Q","partition_id":"P","keys":["a","b"]}`)
	require.Equal(t, 200, r.status)
	require.Equal(t, []string{"a", "b"}, fake.streams.stateReq.Keys)

	for _, c := range []struct{ body, msg string }{
		{`{"partition_id":"P"}`, "query_id is required"},
		{`{"query_id":"Q"}`, "partition_id is required"},
		{`{"query_id":"Q","partition_id":"P","keys":"a"}`, "keys must be an array of strings"},
		{`{"query_id":"Q","partition_id":"P","keys":[1]}`, "keys must be an array of strings"},
		{`{"query_id":"Q","partition_id":"P","ripe_at_or_before":"5"}`, "ripe_at_or_before must be a number (epoch ms)"},
	} {
		r := ts.do("POST", "/streams/v1/state/get", c.body)
		requireJSON(t, r, 400, `{"success":false,"error":`+string(appendString(nil, c.msg))+`}`)
	}
}

func TestRipeAtOrBefore(t *testing.T) {
	ripe := ripeAtOrBefore(100)
	for _, c := range []struct {
		value string
		want  bool
	}{
		{`{"windowEnd":100}`, true},
		{`{"windowEnd":99.5,"acc":{"x":[1]}}`, true},
		{` {"acc":1, "windowEnd":1e2}`, true},
		{`{"windowEnd":101}`, false},
		{`{"windowEnd":"50"}`, false}, // a string is not a number
		{`{"windowEnd":null}`, false},
		{`{"acc":1}`, false},
		{`[{"windowEnd":1}]`, false},
		{`5`, false},
		{``, false},
	} {
		require.Equal(t, c.want, ripe([]byte(c.value)), "%s", c.value)
	}
}

func TestStreamQueriesAndMetrics(t *testing.T) {
	fake := newFake()
	fake.streams.queries = []broker.StreamQueryInfo{{QueryID: "Q", Name: "q1", SourceQueue: "src", ConfigHash: "h",
		CreatedAtMicros: 1_700_000_000_000_000, UpdatedAtMicros: 1_700_000_001_000_000, Shards: 2, Keys: 3, StateBytes: 99, Cycles: 7}}
	fake.streams.stats = broker.StreamStats{Queries: 1, Cycles: 7, FailedCycles: 2, StateKeys: 3, StateBytes: 99}
	ts := startServer(t, fake, Config{})

	r := ts.do("GET", "/api/v1/streams/queries", "")
	requireJSON(t, r, 200, `{"queries":[{"queryId":"Q","name":"q1","sourceQueue":"src","sinkQueue":null,"configHash":"h",
	 "createdAt":"2023-11-14T22:13:20.000Z","updatedAt":"2023-11-14T22:13:21.000Z","shards":2,"keys":3,"stateBytes":99,"cycles":7}]}`)
	fake.streams.queries = nil
	requireJSON(t, ts.do("GET", "/api/v1/streams/queries", ""), 200, `{"queries":[]}`)

	text := string(ts.do("GET", "/metrics/prometheus", "").body)
	for _, line := range []string{
		"# TYPE comb_stream_cycles_total counter",
		`comb_stream_cycles_total{scope="cluster"} 7`,
		`comb_stream_cycles_failed_total{scope="cluster"} 2`,
		"# TYPE comb_stream_state_keys gauge",
		"comb_stream_state_keys 3",
		"comb_stream_state_bytes 99",
		"comb_stream_queries 1",
	} {
		require.Contains(t, text, line+"\n")
	}
}

// The broker's store keeps a cycle's state values without copying them
// (broker.StreamStateOp.Value), so the decoder's must be its own: a request
// buffer reused for the next request must not change a stored value.
func TestStreamCycleDecodedValuesDoNotAliasTheBody(t *testing.T) {
	body := []byte(`{"query_id":"q","partition_id":"p","state_ops":[{"type":"upsert","key":"a","value":{"n":1}},` +
		`{"type":"upsert","key":"b","value":"text"},{"type":"upsert","key":"c"}]}`)
	req, msg := decodeStreamCycle(body)
	require.Empty(t, msg)
	for i := range body {
		body[i] = 'x'
	}
	require.Len(t, req.StateOps, 3)
	require.Equal(t, `{"n":1}`, string(req.StateOps[0].Value))
	require.Equal(t, `"text"`, string(req.StateOps[1].Value))
	require.Equal(t, `{}`, string(req.StateOps[2].Value))
}
