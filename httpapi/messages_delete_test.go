package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// popTxIDs pops from mq and returns the transactionIds delivered (none for a 204) and the lease.
func popTxIDs(t *testing.T, ts *msgServer, query string) ([]string, string) {
	t.Helper()
	r := ts.do("GET", "/api/v1/pop/queue/mq?"+query, "")
	if r.status == 204 {
		return nil, ""
	}
	require.Equal(t, 200, r.status, "%s", r.body)
	var env struct {
		LeaseID  string `json:"leaseId"`
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(r.body, &env))
	var out []string
	for _, m := range env.Messages {
		out = append(out, m.TransactionID)
	}
	return out, env.LeaseID
}

func listTxIDs(t *testing.T, ts *msgServer) []string {
	t.Helper()
	r := ts.do("GET", "/api/v1/messages?queue=mq", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	var l struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(r.body, &l))
	out := []string{}
	for _, m := range l.Messages {
		out = append(out, m.TransactionID)
	}
	return out
}

// spec 8.5 DELETE, issue 13: a deleted message is never delivered again, to any group (at the
// head of what a group has left, in the middle of a span, at its tail), disappears from the
// list and the detail, and stays deleted after a crash (the tombstone is durable before the
// 200).
func TestDeletedMessageIsNeverDeliveredAndSurvivesACrash(t *testing.T) {
	clock := &testClock{now: t0}
	mem := vfs.NewMem()
	ts := startMsgServer(t, mem, clock)
	pid := seedMessages(t, ts, clock)
	expectJSON(t, ts.do("DELETE", "/api/v1/messages/"+pid+"/t2", ""), 200,
		fmt.Sprintf(`{"success":true,"partitionId":%q,"transactionId":"t2","message":"Message deleted successfully"}`, pid))
	expectJSON(t, ts.do("DELETE", "/api/v1/messages/"+pid+"/t2", ""), 200,
		fmt.Sprintf(`{"success":false,"partitionId":%q,"transactionId":"t2","message":"Message not found"}`, pid))
	expectJSON(t, ts.do("DELETE", "/api/v1/messages/"+pid+"/nope", ""), 200,
		fmt.Sprintf(`{"success":false,"partitionId":%q,"transactionId":"nope","message":"Message not found"}`, pid))
	expectJSON(t, ts.do("GET", "/api/v1/messages/"+pid+"/t2", ""), 404, `{"error":"Message not found"}`)
	require.Equal(t, []string{"t3", "t1"}, listTxIDs(t, ts))

	// A power loss right after the 200: the tombstone is on disk.
	crashed := mem.Crash(true)
	ts.stop()
	ts = startMsgServer(t, crashed, clock)
	require.Equal(t, []string{"t3", "t1"}, listTxIDs(t, ts))
	expectJSON(t, ts.do("GET", "/api/v1/messages/"+pid+"/t2", ""), 404, `{"error":"Message not found"}`)

	// In the middle of a span: group g is given t1 and t3, and its ack of t3 commits past t2.
	got, lease := popTxIDs(t, ts, "consumerGroup=g&batch=10")
	require.Equal(t, []string{"t1", "t3"}, got)
	r := ts.do("POST", "/api/v1/ack", fmt.Sprintf(`{"transactionId":"t3","partitionId":%q,"leaseId":%q,"consumerGroup":"g"}`, pid, lease))
	require.Equal(t, 200, r.status, "%s", r.body)
	got, _ = popTxIDs(t, ts, "consumerGroup=g&batch=10")
	require.Empty(t, got)

	// At the head: queue mode takes t1, then t2 is stepped over and t3 delivered.
	got, lease = popTxIDs(t, ts, "batch=1")
	require.Equal(t, []string{"t1"}, got)
	r = ts.do("POST", "/api/v1/ack", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"leaseId":%q}`, pid, lease))
	require.Equal(t, 200, r.status, "%s", r.body)
	got, _ = popTxIDs(t, ts, "batch=1")
	require.Equal(t, []string{"t3"}, got)

	// At the tail, and alone: a deleted newest message is given to nobody.
	clock.Set(t0.Add(5 * time.Second))
	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"mq","partition":"p","transactionId":"t4","payload":4}]}`)
	require.Equal(t, 201, r.status)
	require.Equal(t, 200, ts.do("DELETE", "/api/v1/messages/"+pid+"/t4", "").status)
	got, _ = popTxIDs(t, ts, "consumerGroup=h&batch=10")
	require.Equal(t, []string{"t1", "t3"}, got)
	got, _ = popTxIDs(t, ts, "consumerGroup=k&batch=10&autoAck=true")
	require.Equal(t, []string{"t1", "t3"}, got)
	got, _ = popTxIDs(t, ts, "consumerGroup=k&batch=10&autoAck=true")
	require.Empty(t, got, "t4 is stepped over, not delivered")
}

// spec 9.3: POST /api/v1/traces (201, the 400s, 404 for an unknown message), the three read
// routes with Queen's snake_case shapes, and traces surviving a crash.
func TestTracesRoutes(t *testing.T) {
	clock := &testClock{now: t0}
	mem := vfs.NewMem()
	ts := startMsgServer(t, mem, clock)
	pid := seedMessages(t, ts, clock)

	bad := []struct{ name, body, want string }{
		{"empty body", "", `{"error":"Empty request body"}`},
		{"no partitionId", `{"transactionId":"t1","data":{}}`, `{"error":"transactionId and partitionId are required"}`},
		{"no transactionId", fmt.Sprintf(`{"partitionId":%q,"data":{}}`, pid), `{"error":"transactionId and partitionId are required"}`},
		{"no data", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q}`, pid), `{"error":"data is required"}`},
		{"null data", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"data":null}`, pid), `{"error":"data is required"}`},
		{"bad names", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"data":1,"traceNames":5}`, pid), `{"error":"traceNames must be a string or an array of strings"}`},
		{"invalid UTF-8", fmt.Sprintf("{\"transactionId\":\"t1\",\"partitionId\":%q,\"data\":{\"a\":\"\xff\"}}", pid), `{"error":"Invalid JSON: not valid UTF-8"}`},
		{"too many names", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"data":1,"traceNames":[%s"x"]}`, pid, strings.Repeat(`"n",`, 32)), `{"error":"traceNames: at most 32 names"}`},
		{"long name", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"data":1,"traceNames":%q}`, pid, strings.Repeat("n", 256)), `{"error":"consumerGroup, eventType, workerId and traceNames: at most 255 characters each"}`},
		{"large data", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"data":%q}`, pid, strings.Repeat("d", 64<<10)), `{"error":"data: at most 65536 bytes of JSON, got 65538"}`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) { expectJSON(t, ts.do("POST", "/api/v1/traces", c.body), 400, c.want) })
	}
	expectJSON(t, ts.do("POST", "/api/v1/traces", fmt.Sprintf(`{"transactionId":"zz","partitionId":%q,"data":1}`, pid)), 404, `{"error":"Message not found"}`)

	post := func(at time.Duration, body string) string {
		clock.Set(t0.Add(at))
		r := ts.do("POST", "/api/v1/traces", body)
		require.Equal(t, 201, r.status, "%s", r.body)
		var res struct {
			Success bool   `json:"success"`
			TraceID string `json:"traceId"`
		}
		require.NoError(t, json.Unmarshal(r.body, &res))
		require.True(t, res.Success)
		require.Len(t, res.TraceID, 36)
		return res.TraceID
	}
	a := post(10*time.Second, fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"traceNames":["order-flow","x"],"data":{"step":1}}`, pid))
	b := post(11*time.Second, fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"consumerGroup":"g","traceNames":"order-flow","eventType":"error","workerId":"w1","data":"failed"}`, pid))
	c := post(12*time.Second, fmt.Sprintf(`{"transactionId":"t3","partitionId":%q,"data":[1]}`, pid))

	check := func(ts *msgServer) {
		expectJSON(t, ts.do("GET", "/api/v1/traces/"+pid+"/t1", ""), 200, fmt.Sprintf(`{"traces":[
		  {"id":%q,"event_type":"info","data":{"step":1},"consumer_group":"__QUEUE_MODE__","worker_id":null,"created_at":"2026-07-30T09:00:10.000Z","trace_names":["order-flow","x"]},
		  {"id":%q,"event_type":"error","data":"failed","consumer_group":"g","worker_id":"w1","created_at":"2026-07-30T09:00:11.000Z","trace_names":["order-flow"]}]}`, a, b))
		expectJSON(t, ts.do("GET", "/api/v1/traces/"+pid+"/t3", ""), 200, fmt.Sprintf(`{"traces":[
		  {"id":%q,"event_type":"info","data":[1],"consumer_group":"__QUEUE_MODE__","worker_id":null,"created_at":"2026-07-30T09:00:12.000Z","trace_names":[]}]}`, c))
		expectJSON(t, ts.do("GET", "/api/v1/traces/"+pid+"/t2", ""), 200, `{"traces":[]}`)
		expectJSON(t, ts.do("GET", "/api/v1/traces/by-name/order-flow?limit=1&offset=1", ""), 200, fmt.Sprintf(`{"traces":[
		  {"id":%q,"transaction_id":"t1","partition_id":%q,"event_type":"info","data":{"step":1},"consumer_group":"__QUEUE_MODE__","worker_id":null,
		   "created_at":"2026-07-30T09:00:10.000Z","queue_name":"mq","partition_name":"p","message_payload":{"n":1},"trace_names":["order-flow","x"]}],
		  "total":2,"pagination":{"limit":1,"offset":1}}`, a, pid))
		expectJSON(t, ts.do("GET", "/api/v1/traces/by-name/none", ""), 200, `{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`)
		expectJSON(t, ts.do("GET", "/api/v1/traces/names", ""), 200, `{"trace_names":[
		  {"trace_name":"order-flow","trace_count":2,"message_count":1,"last_seen":"2026-07-30T09:00:11.000Z"},
		  {"trace_name":"x","trace_count":1,"message_count":1,"last_seen":"2026-07-30T09:00:10.000Z"}],"total":2,"pagination":{"limit":50,"offset":0}}`)
	}
	check(ts)
	crashed := mem.Crash(true)
	ts.stop()
	check(startMsgServer(t, crashed, clock))
}

// Traces and tombstones go with their messages (issue 13: "they go with their message's
// retention"): once the queue is deleted its notes are gone from the listings, and stay gone
// after a restart.
func TestNotesGoWithTheirQueue(t *testing.T) {
	clock := &testClock{now: t0}
	mem := vfs.NewMem()
	ts := startMsgServer(t, mem, clock)
	pid := seedMessages(t, ts, clock)
	r := ts.do("POST", "/api/v1/traces", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"traceNames":"gone","data":1}`, pid))
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Equal(t, 200, ts.do("DELETE", "/api/v1/messages/"+pid+"/t2", "").status)
	require.Equal(t, 200, ts.do("DELETE", "/api/v1/resources/queues/mq", "").status)
	empty := `{"trace_names":[],"total":0,"pagination":{"limit":50,"offset":0}}`
	expectJSON(t, ts.do("GET", "/api/v1/traces/names", ""), 200, empty)
	expectJSON(t, ts.do("GET", "/api/v1/traces/by-name/gone", ""), 200, `{"traces":[],"total":0,"pagination":{"limit":100,"offset":0}}`)
	ts.stop()
	ts = startMsgServer(t, mem, clock)
	expectJSON(t, ts.do("GET", "/api/v1/traces/names", ""), 200, empty)
	// A new queue of the same name starts clean: its partition is a new id.
	pid2 := seedMessages(t, ts, clock)
	require.NotEqual(t, pid, pid2)
	require.Equal(t, []string{"t3", "t2", "t1"}, listTxIDs(t, ts))
}
