package httpapi

import (
	"encoding/json"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// A client of the /streams/v1 routes that makes the calls Queen's streams runtimes make
// (client-go streams/runtime/protocol.go and runner.go, client-js client-v2/streams/runtime):
// register once, then per partition pop with the normal pop route, read state, commit a cycle.
// The operators (map, filter, windows) run here in the test, as they run in the client.

// streamsServer is a real broker behind a real server on a data directory that outlives a
// restart, with a clock the test moves (lease expiry without sleeping).
type streamsServer struct {
	t     *testing.T
	dir   string
	ts    *testServer
	b     *broker.Broker
	shift atomic.Int64 // ns added to the wall clock
	stop  func()
}

func startStreamsServer(t *testing.T) *streamsServer {
	s := &streamsServer{t: t, dir: t.TempDir()}
	s.start()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *streamsServer) now() time.Time { return time.Now().Add(time.Duration(s.shift.Load())) }

// start opens the broker on s.dir and serves it.
func (s *streamsServer) start() {
	s.ts, s.b, s.stop = serveReal(s.t, broker.Config{DataDir: s.dir, Sync: "never", Logger: zerolog.Nop(), Now: s.now})
}

// restart closes the broker cleanly and opens it again on the same directory.
func (s *streamsServer) restart() {
	s.stop()
	s.start()
}

// post sends body (marshalled as the SDKs do) and decodes the answer.
func (s *streamsServer) post(path string, body any) (int, map[string]any) {
	s.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(s.t, err)
	r := s.ts.do("POST", path, string(b))
	var out map[string]any
	require.NoError(s.t, json.Unmarshal(r.body, &out), "%s: %s", path, r.body)
	return r.status, out
}

func (s *streamsServer) register(name, source, sink, hash string, reset bool) (int, map[string]any) {
	s.t.Helper()
	body := map[string]any{"name": name, "source_queue": source, "config_hash": hash, "reset": reset}
	if sink != "" {
		body["sink_queue"] = sink
	}
	return s.post("/streams/v1/queries", body)
}

// registerOK registers and returns the query_id.
func (s *streamsServer) registerOK(name, source, sink string) string {
	s.t.Helper()
	st, res := s.register(name, source, sink, "h1", false)
	require.Equal(s.t, 200, st, "%v", res)
	return res["query_id"].(string)
}

func (s *streamsServer) push(queue, partition string, payloads ...any) {
	s.t.Helper()
	items := make([]map[string]any, len(payloads))
	for i, p := range payloads {
		items[i] = map[string]any{"queue": queue, "partition": partition, "payload": p}
	}
	b, err := json.Marshal(map[string]any{"items": items})
	require.NoError(s.t, err)
	r := s.ts.do("POST", "/api/v1/push", string(b))
	require.Equal(s.t, 201, r.status, "%s", r.body)
}

// popped is a pop answer as the runtimes read it.
type popped struct {
	LeaseID  string `json:"leaseId"`
	Messages []struct {
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		Partition     string          `json:"partition"`
		LeaseID       string          `json:"leaseId"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

// pop pops a batch (nil for 204); partitions > 1 claims several partitions as the Go runtime
// does with MaxPartitions.
func (s *streamsServer) pop(queue, group string, batch, partitions int) *popped {
	s.t.Helper()
	q := url.Values{}
	q.Set("batch", strconv.Itoa(batch))
	q.Set("partitions", strconv.Itoa(partitions))
	if group != "" {
		q.Set("consumerGroup", group)
	}
	r := s.ts.do("GET", "/api/v1/pop/queue/"+queue+"?"+q.Encode(), "")
	if r.status == 204 {
		return nil
	}
	require.Equal(s.t, 200, r.status, "%s", r.body)
	var p popped
	require.NoError(s.t, json.Unmarshal(r.body, &p))
	return &p
}

// state is GetState: key → decoded value.
func (s *streamsServer) state(qid, pid string, extra map[string]any) map[string]any {
	s.t.Helper()
	body := map[string]any{"query_id": qid, "partition_id": pid, "keys": nil}
	for k, v := range extra {
		body[k] = v
	}
	st, res := s.post("/streams/v1/state/get", body)
	require.Equal(s.t, 200, st, "%v", res)
	require.Equal(s.t, true, res["success"])
	out := map[string]any{}
	for _, r := range res["rows"].([]any) {
		row := r.(map[string]any)
		require.Regexp(s.t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, row["updated_at"])
		out[row["key"].(string)] = row["value"]
	}
	return out
}

// cycle is CommitCycle: state_ops and push_items forced to [] as the Go runtime does.
func (s *streamsServer) cycle(qid, pid, group string, ops, pushes []map[string]any, ack map[string]any, release bool) map[string]any {
	s.t.Helper()
	if ops == nil {
		ops = []map[string]any{}
	}
	if pushes == nil {
		pushes = []map[string]any{}
	}
	st, res := s.post("/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": pid, "consumer_group": group,
		"state_ops": ops, "push_items": pushes, "ack": ack, "release_lease": release})
	require.Equal(s.t, 200, st, "%v", res)
	return res
}

// ackOf is the runtimes' ack of a popped span: its last message, count = the span's size.
func ackOf(p *popped) map[string]any {
	last := p.Messages[len(p.Messages)-1]
	lease := last.LeaseID
	if lease == "" {
		lease = p.LeaseID
	}
	return map[string]any{"transactionId": last.TransactionID, "leaseId": lease, "status": "completed", "count": len(p.Messages)}
}

// sinkPayloads drains a sink queue with a fresh group and returns the payloads in order.
func (s *streamsServer) sinkPayloads(queue, group string) []string {
	s.t.Helper()
	var out []string
	for {
		p := s.pop(queue, group, 1000, 1000)
		if p == nil {
			return out
		}
		for _, m := range p.Messages {
			var v any
			require.NoError(s.t, json.Unmarshal(m.Data, &v))
			b, _ := json.Marshal(v)
			out = append(out, string(b))
		}
		for _, m := range p.Messages {
			s.ts.do("POST", "/api/v1/ack", `{"transactionId":"`+m.TransactionID+`","partitionId":"`+m.PartitionID+`","consumerGroup":"`+group+`"}`)
		}
	}
}

func TestStreamsMapFilterPipelineIntoASink(t *testing.T) {
	s := startStreamsServer(t)
	qid := s.registerOK("mapfilter", "orders", "big-orders")
	s.push("orders", "p0", map[string]any{"n": 1}, map[string]any{"n": 2}, map[string]any{"n": 3}, map[string]any{"n": 4}, map[string]any{"n": 5})

	p := s.pop("orders", "streams.mapfilter", 200, 1)
	require.Len(t, p.Messages, 5)
	pid := p.Messages[0].PartitionID
	// map n → n*10, filter n*10 > 20: the sink gets 30, 40, 50 in emit order.
	var pushes []map[string]any
	for _, m := range p.Messages {
		var v struct{ N int }
		require.NoError(t, json.Unmarshal(m.Data, &v))
		if v.N*10 > 20 {
			pushes = append(pushes, map[string]any{"queue": "big-orders", "partition": "p0", "payload": map[string]any{"v": v.N * 10}})
		}
	}
	res := s.cycle(qid, pid, "streams.mapfilter", nil, pushes, ackOf(p), true)
	require.Equal(t, true, res["success"], "%v", res)
	require.Equal(t, "orders", res["queueName"])
	require.Equal(t, float64(0), res["state_ops_applied"])
	require.Equal(t, map[string]any{"success": true, "count": float64(5), "lease_released": true, "dlq": false}, res["ack_result"])
	results := res["push_results"].([]any)
	require.Len(t, results, 3)
	for _, r := range results {
		require.Equal(t, "queued", r.(map[string]any)["status"])
	}
	require.Equal(t, []string{`{"v":30}`, `{"v":40}`, `{"v":50}`}, s.sinkPayloads("big-orders", "reader"))
	require.Nil(t, s.pop("orders", "streams.mapfilter", 200, 1), "the source span is acked")

	// A cycle that cannot apply (its ack names no message) is 200 success:false and leaves
	// no trace: no sink message, no state.
	s.push("orders", "p0", map[string]any{"n": 6})
	p = s.pop("orders", "streams.mapfilter", 200, 1)
	bad := ackOf(p)
	bad["transactionId"] = "no-such-message"
	res = s.cycle(qid, pid, "streams.mapfilter", []map[string]any{{"type": "upsert", "key": "k", "value": 1}},
		[]map[string]any{{"queue": "big-orders", "partition": "p0", "payload": map[string]any{"v": 60}}}, bad, true)
	require.Equal(t, false, res["success"])
	require.NotEmpty(t, res["error"])
	require.Empty(t, s.sinkPayloads("big-orders", "reader"))
	require.Empty(t, s.state(qid, pid, nil))
}

func TestStreamsTumblingWindowSumSurvivesARestart(t *testing.T) {
	s := startStreamsServer(t)
	qid := s.registerOK("tumbling", "clicks", "click-sums")
	const tag = "tumble"
	key := func(ws int64, user string) string { return tag + "\x1f" + strconv.FormatInt(ws, 10) + "\x1f" + user }

	// One cycle of the tumbling path: load state, add each event to its 10 s window, upsert.
	runCycle := func() {
		p := s.pop("clicks", "", 200, 1)
		require.NotNil(t, p)
		pid := p.Messages[0].PartitionID
		st := s.state(qid, pid, nil)
		sums := map[string]map[string]any{}
		for _, m := range p.Messages {
			var ev struct {
				User string
				TS   int64
				N    float64
			}
			require.NoError(t, json.Unmarshal(m.Data, &ev))
			ws := ev.TS / 10_000 * 10_000
			k := key(ws, ev.User)
			if sums[k] == nil {
				sums[k] = map[string]any{"acc": 0.0, "windowStart": ws, "windowEnd": ws + 10_000}
				if old, ok := st[k].(map[string]any); ok {
					sums[k]["acc"] = old["acc"]
				}
			}
			sums[k]["acc"] = sums[k]["acc"].(float64) + ev.N
		}
		var ops []map[string]any
		for k, v := range sums {
			ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": v})
		}
		res := s.cycle(qid, pid, "", ops, nil, ackOf(p), true)
		require.Equal(t, true, res["success"], "%v", res)
	}
	s.push("clicks", "p0", map[string]any{"user": "a", "ts": 1_000, "n": 1}, map[string]any{"user": "b", "ts": 2_000, "n": 5},
		map[string]any{"user": "a", "ts": 9_999, "n": 2})
	runCycle()
	s.push("clicks", "p0", map[string]any{"user": "a", "ts": 5_000, "n": 4}, map[string]any{"user": "a", "ts": 12_000, "n": 7})
	runCycle()

	s.push("clicks", "p0", map[string]any{"user": "x", "ts": 0, "n": 0}) // only to learn the partition id
	pid := s.pop("clicks", "peek", 1, 1).Messages[0].PartitionID
	want := map[string]any{
		key(0, "a"):      map[string]any{"acc": 7.0, "windowStart": 0.0, "windowEnd": 10_000.0},
		key(0, "b"):      map[string]any{"acc": 5.0, "windowStart": 0.0, "windowEnd": 10_000.0},
		key(10_000, "a"): map[string]any{"acc": 7.0, "windowStart": 10_000.0, "windowEnd": 20_000.0},
	}
	require.Equal(t, want, s.state(qid, pid, nil))

	s.restart()
	require.Equal(t, want, s.state(qid, pid, nil), "the state survives a restart")
	require.Equal(t, map[string]any{key(0, "b"): want[key(0, "b")]}, s.state(qid, pid, map[string]any{"keys": []string{key(0, "b"), "absent"}}))

	// The idle flush: rows of this operator whose window ended at or before the watermark
	// minus grace are emitted to the sink and deleted, in one cycle without an ack.
	ripe := s.state(qid, pid, map[string]any{"keys": []string{}, "key_prefix": tag + "\x1f", "ripe_at_or_before": 15_000})
	require.Equal(t, map[string]any{key(0, "a"): want[key(0, "a")], key(0, "b"): want[key(0, "b")]}, ripe)
	var ops, pushes []map[string]any
	for _, k := range []string{key(0, "a"), key(0, "b")} {
		v := ripe[k].(map[string]any)
		ops = append(ops, map[string]any{"type": "delete", "key": k})
		pushes = append(pushes, map[string]any{"queue": "click-sums", "partition": "p0", "payload": map[string]any{"key": k[len(tag)+3:], "sum": v["acc"]}})
	}
	res := s.cycle(qid, pid, "", ops, pushes, nil, true)
	require.Equal(t, true, res["success"], "%v", res)
	require.Nil(t, res["ack_result"])
	require.Equal(t, map[string]any{key(10_000, "a"): want[key(10_000, "a")]}, s.state(qid, pid, nil))
	require.Equal(t, []string{`{"key":"a","sum":7}`, `{"key":"b","sum":5}`}, s.sinkPayloads("click-sums", "reader"))
	require.Empty(t, s.state(qid, pid, map[string]any{"key_prefix": tag + "\x1f", "ripe_at_or_before": 15_000}))
}

func TestStreamsKeyByFanOutOverManyPartitions(t *testing.T) {
	s := startStreamsServer(t)
	qid := s.registerOK("keyby", "events", "")
	const parts = 40
	for i := 0; i < parts; i++ {
		s.push("events", "user-"+strconv.Itoa(i), map[string]any{"n": 1}, map[string]any{"n": 2}, map[string]any{"n": i})
	}
	// The Go runtime's loop: pop up to 4 partitions at once, group by partitionId, one cycle
	// per partition under the shared lease.
	seen := map[string]string{} // partition name → id
	for cycles := 0; ; cycles++ {
		require.Less(t, cycles, 1000, "the backlog drains")
		p := s.pop("events", "streams.keyby", 200, 4)
		if p == nil {
			break
		}
		byPart := map[string]*popped{}
		for _, m := range p.Messages {
			g := byPart[m.PartitionID]
			if g == nil {
				g = &popped{LeaseID: p.LeaseID}
				byPart[m.PartitionID] = g
			}
			g.Messages = append(g.Messages, m)
			seen[m.Partition] = m.PartitionID
		}
		for pid, g := range byPart {
			cur := 0.0
			if v, ok := s.state(qid, pid, map[string]any{"keys": []string{"sum"}})["sum"].(float64); ok {
				cur = v
			}
			for _, m := range g.Messages {
				var v struct{ N float64 }
				require.NoError(t, json.Unmarshal(m.Data, &v))
				cur += v.N
			}
			res := s.cycle(qid, pid, "streams.keyby", []map[string]any{{"type": "upsert", "key": "sum", "value": cur}}, nil, ackOf(g), true)
			require.Equal(t, true, res["success"], "%v", res)
		}
	}
	require.Len(t, seen, parts)
	for name, pid := range seen {
		i, err := strconv.Atoi(name[len("user-"):])
		require.NoError(t, err)
		require.Equal(t, map[string]any{"sum": float64(3 + i)}, s.state(qid, pid, nil), name)
	}
	r := s.ts.do("GET", "/api/v1/streams/queries", "")
	require.Equal(t, 200, r.status)
	var list struct {
		Queries []map[string]any `json:"queries"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	require.Len(t, list.Queries, 1)
	q := list.Queries[0]
	require.Equal(t, qid, q["queryId"])
	require.Equal(t, "events", q["sourceQueue"])
	require.Nil(t, q["sinkQueue"])
	require.Equal(t, float64(parts), q["shards"])
	require.Equal(t, float64(parts), q["keys"])
	s.ts.awaitApplied()
	text := string(s.ts.do("GET", "/metrics/prometheus", "").body)
	require.Contains(t, text, "comb_stream_queries 1\n")
	require.Contains(t, text, "comb_stream_state_keys "+strconv.Itoa(parts)+"\n")
	t.Run("cycle counter", func(t *testing.T) {
		skipOnFollower(t, "/metrics/prometheus is the node's own (forward.go): the leader counted the cycles this follower forwarded")
		require.Regexp(t, `comb_stream_cycles_total\{scope="cluster"\} [1-9][0-9]*\n`, text)
	})
}

func TestStreamsGateKeepsTheLeaseAndTheTailComesBackInOrder(t *testing.T) {
	s := startStreamsServer(t)
	qid := s.registerOK("gate", "jobs", "")
	s.push("jobs", "p0", map[string]any{"i": 1}, map[string]any{"i": 2}, map[string]any{"i": 3}, map[string]any{"i": 4}, map[string]any{"i": 5})
	p := s.pop("jobs", "", 200, 1)
	require.Len(t, p.Messages, 5)
	pid := p.Messages[0].PartitionID

	// The gate allows 2 and denies the third: a partial ack with release_lease false.
	allowed := &popped{LeaseID: p.LeaseID, Messages: p.Messages[:2]}
	res := s.cycle(qid, pid, "", []map[string]any{{"type": "upsert", "key": "tokens", "value": map[string]any{"left": 0}}}, nil, ackOf(allowed), false)
	require.Equal(t, true, res["success"], "%v", res)
	require.Equal(t, map[string]any{"success": true, "count": float64(2), "lease_released": false, "dlq": false}, res["ack_result"])
	require.Nil(t, s.pop("jobs", "", 200, 1), "the lease still holds the tail")

	s.shift.Add(int64(301 * time.Second)) // past the queue's default leaseTime (300 s)
	p = s.pop("jobs", "", 200, 1)
	require.NotNil(t, p, "the tail is redelivered once the lease expires")
	var got []string
	for _, m := range p.Messages {
		got = append(got, string(m.Data))
	}
	require.Equal(t, []string{`{"i":3}`, `{"i":4}`, `{"i":5}`}, got)
	require.Equal(t, map[string]any{"tokens": map[string]any{"left": 0.0}}, s.state(qid, pid, nil))
}

func TestStreamsConfigHashConflictAndReset(t *testing.T) {
	s := startStreamsServer(t)
	st, first := s.register("q", "src", "", "h1", false)
	require.Equal(t, 200, st)
	require.Equal(t, true, first["fresh"])
	require.Equal(t, false, first["reset"])
	qid := first["query_id"].(string)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, qid)

	st, again := s.register("q", "src", "", "h1", false)
	require.Equal(t, 200, st)
	require.Equal(t, map[string]any{"success": true, "query_id": qid, "name": "q", "config_hash": "h1", "fresh": false, "reset": false}, again)

	s.push("src", "p0", map[string]any{"n": 1})
	p := s.pop("src", "", 10, 1)
	pid := p.Messages[0].PartitionID
	res := s.cycle(qid, pid, "", []map[string]any{{"type": "upsert", "key": "k", "value": "v"}}, nil, ackOf(p), true)
	require.Equal(t, true, res["success"], "%v", res)
	require.Equal(t, map[string]any{"k": "v"}, s.state(qid, pid, nil))

	st, conflict := s.register("q", "src", "", "h2", false)
	require.Equal(t, 409, st)
	require.Equal(t, false, conflict["success"])
	require.Contains(t, conflict["error"], "config_hash")
	require.Equal(t, map[string]any{"k": "v"}, s.state(qid, pid, nil), "a refused registration changes nothing")

	st, reset := s.register("q", "src", "", "h2", true)
	require.Equal(t, 200, st)
	require.Equal(t, map[string]any{"success": true, "query_id": qid, "name": "q", "config_hash": "h2", "fresh": false, "reset": true}, reset)
	require.Empty(t, s.state(qid, pid, nil), "reset wipes the query's state")

	s.restart()
	require.Empty(t, s.state(qid, pid, nil), "the reset is durable")
	st, after := s.register("q", "src", "", "h2", false)
	require.Equal(t, 200, st)
	require.Equal(t, false, after["reset"])
}
