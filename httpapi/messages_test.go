package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/vfs"
)

// t0 is the fixed clock the message tests start from.
var t0 = time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// msgServer is a real broker on fsys behind a real server, with the test's clock. stop closes
// both (a clean shutdown); the test may call it before the cleanup does.
type msgServer struct {
	*testServer
	b    *broker.Broker
	stop func()
}

func startMsgServer(t *testing.T, fsys vfs.FS, clock *testClock) *msgServer {
	t.Helper()
	ts, b, stop := serveReal(t, broker.Config{DataDir: "/data", FS: fsys, Logger: zerolog.Nop(), Now: clock.Now,
		MaintenanceInterval: time.Hour})
	return &msgServer{testServer: ts, b: b, stop: stop}
}

// expectJSON asserts the status and that the body equals want (JSON, exact fields and values).
func expectJSON(t *testing.T, r response, status int, want string) {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	require.JSONEq(t, want, string(r.body))
}

// seedMessages configures mq (namespace shop, task bill, retryLimit 0, leaseTime 30) and pushes
// t1, t2, t3 to partition p at t0+1s, +2s, +3s (one push each); it returns the partition id.
func seedMessages(t *testing.T, ts *msgServer, clock *testClock) string {
	r := ts.do("POST", "/api/v1/configure", `{"queue":"mq","namespace":"shop","task":"bill","options":{"retryLimit":0,"leaseTime":30,"priority":4}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	var pid string
	for i := 1; i <= 3; i++ {
		clock.Set(t0.Add(time.Duration(i) * time.Second))
		r = ts.do("POST", "/api/v1/push", fmt.Sprintf(`{"items":[{"queue":"mq","partition":"p","transactionId":"t%d","payload":{"n":%d}}]}`, i, i))
		require.Equal(t, 201, r.status, "%s", r.body)
		pid = r.json(t).([]any)[0].(map[string]any)["partition_id"].(string)
	}
	clock.Set(t0.Add(4 * time.Second))
	return pid
}

// ids maps each transactionId of the queue to its message id (from the list).
func messageIDs(t *testing.T, ts *msgServer) map[string]string {
	r := ts.do("GET", "/api/v1/messages?queue=mq", "")
	require.Equal(t, 200, r.status)
	out := map[string]string{}
	for _, m := range r.json(t).(map[string]any)["messages"].([]any) {
		mm := m.(map[string]any)
		out[mm["transactionId"].(string)] = mm["id"].(string)
	}
	return out
}

func row(pid, id, tx, status string, sec int, lease string) string {
	qs := `"` + status + `"`
	return fmt.Sprintf(`{"id":%q,"transactionId":%q,"partitionId":%q,"queuePath":"mq/p","queue":"mq","partition":"p",
	  "namespace":"shop","task":"bill","status":%q,"queueStatus":%s,"busStatus":{"consumedBy":0,"totalGroups":0},
	  "traceId":null,"producerSub":null,"queuePriority":4,"createdAt":"2026-07-30T09:00:0%d.000000Z","leaseExpiresAt":%s}`,
		id, tx, pid, status, qs, sec, lease)
}

// spec 8.5: the list, newest first, no payloads, statuses relative to __QUEUE_MODE__, every
// filter; the detail with payload, retry count, error and group positions; 404 when unknown.
func TestMessageListAndDetail(t *testing.T) {
	clock := &testClock{now: t0}
	ts := startMsgServer(t, vfs.NewMem(), clock)
	pid := seedMessages(t, ts, clock)
	r := ts.do("GET", "/api/v1/pop/queue/mq?batch=1", "") // __QUEUE_MODE__ leases t1 until t0+34s
	require.Equal(t, 200, r.status, "%s", r.body)
	leaseID := r.json(t).(map[string]any)["leaseId"].(string)
	ids := messageIDs(t, ts)
	lease := `"2026-07-30T09:00:34.000Z"`
	mode := `{"hasQueueMode":true,"busGroupsCount":0,"type":"queue"}`
	all := `{"messages":[` + row(pid, ids["t3"], "t3", "pending", 3, "null") + `,` + row(pid, ids["t2"], "t2", "pending", 2, "null") +
		`,` + row(pid, ids["t1"], "t1", "processing", 1, lease) + `],"mode":` + mode + `}`

	cases := []struct{ name, query, want string }{
		{"the queue, newest first", "queue=mq", all},
		{"the namespace filter is ns", "ns=shop", all},
		{"task and partition", "task=bill&partition=p", all},
		{"another namespace", "ns=other", `{"messages":[],"mode":{"hasQueueMode":false,"busGroupsCount":0,"type":"none"}}`},
		{"status processing", "queue=mq&status=processing", `{"messages":[` + row(pid, ids["t1"], "t1", "processing", 1, lease) + `],"mode":` + mode + `}`},
		{"status pending", "queue=mq&status=pending", `{"messages":[` + row(pid, ids["t3"], "t3", "pending", 3, "null") + `,` + row(pid, ids["t2"], "t2", "pending", 2, "null") + `],"mode":` + mode + `}`},
		{"status completed", "queue=mq&status=completed", `{"messages":[],"mode":` + mode + `}`},
		{"limit and offset", "queue=mq&limit=1&offset=1", `{"messages":[` + row(pid, ids["t2"], "t2", "pending", 2, "null") + `],"mode":` + mode + `}`},
		{"from and to", "queue=mq&from=2026-07-30T09:00:01.500Z&to=2026-07-30T09:00:02.500Z", `{"messages":[` + row(pid, ids["t2"], "t2", "pending", 2, "null") + `],"mode":` + mode + `}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectJSON(t, ts.do("GET", "/api/v1/messages?"+c.query, ""), 200, c.want) })
	}
	expectJSON(t, ts.do("GET", "/api/v1/messages?from=yesterday", ""), 400, `{"error":"Invalid from timestamp: must be ISO-8601"}`)

	detail := func(tx, status, consumed, groupStatus string, cursor int, lease, errMsg string) string {
		return fmt.Sprintf(`{"id":%q,"transactionId":%q,"partitionId":%q,"queuePath":"mq/p","queue":"mq","partition":"p",
		  "namespace":"shop","task":"bill","status":%q,"payload":{"n":1},"isEncrypted":false,"traceId":null,"producerSub":null,
		  "createdAt":"2026-07-30T09:00:01.000000Z","errorMessage":%s,"retryCount":0,"leaseExpiresAt":%s,
		  "queueConfig":{"leaseTime":30,"retryLimit":0,"retryDelay":1000,"ttl":3600,"priority":4},
		  "mode":{"hasQueueMode":true,"busGroupsCount":0,"consumedByGroups":0,"type":"queue"},
		  "consumerGroups":[{"name":"__QUEUE_MODE__","consumed":%s,"status":%q,"cursorOffset":%d,"leaseExpiresAt":%s}]}`,
			ids[tx], tx, pid, status, errMsg, lease, consumed, groupStatus, cursor, lease)
	}
	expectJSON(t, ts.do("GET", "/api/v1/messages/"+pid+"/t1", ""), 200, detail("t1", "processing", "false", "processing", 0, lease, "null"))

	// A failed ack with retryLimit 0 dead-letters t1 (spec 4.5).
	r = ts.do("POST", "/api/v1/ack", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"leaseId":%q,"status":"failed","error":"boom"}`, pid, leaseID))
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, true, r.json(t).([]any)[0].(map[string]any)["dlq"], "%s", r.body)
	expectJSON(t, ts.do("GET", "/api/v1/messages/"+pid+"/t1", ""), 200, detail("t1", "dead_letter", "true", "dead_letter", 1, "null", `"boom"`))
	dl := row(pid, ids["t1"], "t1", "dead_letter", 1, "null")
	expectJSON(t, ts.do("GET", "/api/v1/messages?queue=mq&status=dead_letter", ""), 200, `{"messages":[`+dl+`],"mode":`+mode+`}`)

	// The dashboard's DLQ purge is a message delete: the entry leaves the DLQ listing too.
	r = ts.do("GET", "/api/v1/dlq?queue=mq", "")
	require.Equal(t, float64(1), r.json(t).(map[string]any)["total"], "%s", r.body)
	require.Equal(t, 200, ts.do("DELETE", "/api/v1/messages/"+pid+"/t1", "").status)
	expectJSON(t, ts.do("GET", "/api/v1/dlq?queue=mq", ""), 200, `{"messages":[],"total":0,"pagination":{"limit":100,"offset":0}}`)
	expectJSON(t, ts.do("GET", "/api/v1/messages?queue=mq&status=dead_letter", ""), 200, `{"messages":[],"mode":`+mode+`}`)

	for _, path := range []string{"/api/v1/messages/" + pid + "/no-such-id", "/api/v1/messages/" + pid + "/t1", "/api/v1/messages/not-a-uuid/t1",
		"/api/v1/messages/0198e4c1-0000-7000-8000-000000000000/t1"} {
		expectJSON(t, ts.do("GET", path, ""), 404, `{"error":"Message not found"}`)
	}
}

// With only named groups reading, status is relative to all of them (spec 8.5): processing
// while one holds it, completed once every group is past it.
func TestMessageStatusRelativeToNamedGroups(t *testing.T) {
	clock := &testClock{now: t0}
	ts := startMsgServer(t, vfs.NewMem(), clock)
	pid := seedMessages(t, ts, clock)
	require.Equal(t, 200, ts.do("GET", "/api/v1/pop/queue/mq?consumerGroup=a&batch=3&autoAck=true", "").status)
	require.Equal(t, 200, ts.do("GET", "/api/v1/pop/queue/mq?consumerGroup=b&batch=1", "").status)
	r := ts.do("GET", "/api/v1/messages?queue=mq", "")
	require.Equal(t, 200, r.status)
	var got struct {
		Messages []struct {
			TransactionID string         `json:"transactionId"`
			Status        string         `json:"status"`
			QueueStatus   *string        `json:"queueStatus"`
			BusStatus     map[string]int `json:"busStatus"`
		} `json:"messages"`
		Mode map[string]any `json:"mode"`
	}
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, map[string]any{"hasQueueMode": false, "busGroupsCount": float64(2), "type": "bus"}, got.Mode)
	want := []struct {
		tx, status string
		consumed   int
	}{{"t3", "pending", 1}, {"t2", "pending", 1}, {"t1", "processing", 1}}
	require.Len(t, got.Messages, 3)
	for i, w := range want {
		m := got.Messages[i]
		require.Equal(t, w.tx, m.TransactionID)
		require.Equal(t, w.status, m.Status, w.tx)
		require.Nil(t, m.QueueStatus)
		require.Equal(t, map[string]int{"consumedBy": w.consumed, "totalGroups": 2}, m.BusStatus, w.tx)
	}
	r = ts.do("POST", "/api/v1/ack", fmt.Sprintf(`{"transactionId":"t1","partitionId":%q,"consumerGroup":"b"}`, pid))
	require.Equal(t, 200, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/messages?queue=mq&status=completed", "")
	require.Equal(t, 200, r.status)
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Len(t, got.Messages, 1)
	require.Equal(t, "t1", got.Messages[0].TransactionID)
	require.Equal(t, map[string]int{"consumedBy": 2, "totalGroups": 2}, got.Messages[0].BusStatus)
}

// The message routes encode strings as every other route does: <, > and & as they are (a
// second encoder once answered them as \u003c, \u003e, \u0026).
func TestMessageRoutesDoNotEscapeHTML(t *testing.T) {
	clock := &testClock{now: t0}
	ts := startMsgServer(t, vfs.NewMem(), clock)
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"mq","partition":"p","transactionId":"a<b&c>","payload":{"h":"<i>"}}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	pid := r.json(t).([]any)[0].(map[string]any)["partition_id"].(string)
	r = ts.do("GET", "/api/v1/messages?queue=mq", "")
	require.Equal(t, 200, r.status)
	require.Contains(t, string(r.body), `"transactionId":"a<b&c>"`)
	r = ts.do("GET", "/api/v1/messages/"+pid+"/"+url.PathEscape("a<b&c>"), "")
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Contains(t, string(r.body), `"payload":{"h":"<i>"}`)
}
