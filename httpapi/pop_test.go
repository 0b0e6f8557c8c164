package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestPopParametersGetSeedDefaultsAndClamps(t *testing.T) {
	// seed 000's parameter table and spec 0.3/3.2: defaults, clamps, empty = absent,
	// unparsable integers fall back, booleans are true only for "true" and "1".
	base := broker.PopRequest{Queue: "orders", Batch: 200, Partitions: 1, Timeout: 30 * time.Second}
	cases := []struct {
		name string
		path string
		want func(r *broker.PopRequest)
	}{
		{"no parameters: batch 200, partitions 1, timeout 30000 ms", "/api/v1/pop/queue/orders", func(r *broker.PopRequest) {}},
		{"batch below 1 clamps to 1", "/api/v1/pop/queue/orders?batch=0", func(r *broker.PopRequest) { r.Batch = 1 }},
		{"negative batch clamps to 1", "/api/v1/pop/queue/orders?batch=-5", func(r *broker.PopRequest) { r.Batch = 1 }},
		{"batch above the cap clamps to the cap", "/api/v1/pop/queue/orders?batch=999999", func(r *broker.PopRequest) { r.Batch = 10000 }},
		{"unparsable batch falls back to 200", "/api/v1/pop/queue/orders?batch=ten", func(r *broker.PopRequest) {}},
		{"empty batch is absent", "/api/v1/pop/queue/orders?batch=", func(r *broker.PopRequest) {}},
		{"xbatch does not match batch (spec 11 #30)", "/api/v1/pop/queue/orders?xbatch=5", func(r *broker.PopRequest) {}},
		{"partitions below 1 count as 1", "/api/v1/pop/queue/orders?partitions=0", func(r *broker.PopRequest) {}},
		{"partitions", "/api/v1/pop/queue/orders?partitions=4", func(r *broker.PopRequest) { r.Partitions = 4 }},
		{"wait=true", "/api/v1/pop/queue/orders?wait=true", func(r *broker.PopRequest) { r.Wait = true }},
		{"wait=1", "/api/v1/pop/queue/orders?wait=1", func(r *broker.PopRequest) { r.Wait = true }},
		{"wait=yes is false", "/api/v1/pop/queue/orders?wait=yes", func(r *broker.PopRequest) {}},
		{"autoAck=1", "/api/v1/pop/queue/orders?autoAck=1", func(r *broker.PopRequest) { r.AutoAck = true }},
		{"autoAck=TRUE is false", "/api/v1/pop/queue/orders?autoAck=TRUE", func(r *broker.PopRequest) {}},
		{"timeout in ms", "/api/v1/pop/queue/orders?timeout=1500", func(r *broker.PopRequest) { r.Timeout = 1500 * time.Millisecond }},
		{"timeout 0", "/api/v1/pop/queue/orders?timeout=0", func(r *broker.PopRequest) { r.Timeout = 0 }},
		{"unparsable timeout falls back", "/api/v1/pop/queue/orders?timeout=soon", func(r *broker.PopRequest) {}},
		{"huge timeout is capped", "/api/v1/pop/queue/orders?timeout=99999999999999", func(r *broker.PopRequest) { r.Timeout = maxPopTimeout }},
		{"leaseSeconds", "/api/v1/pop/queue/orders?leaseSeconds=90", func(r *broker.PopRequest) { r.LeaseSeconds = 90 }},
		{"consumerGroup and subscription", "/api/v1/pop/queue/orders?consumerGroup=billing&subscriptionMode=new&subscriptionFrom=2026-07-30T09%3A12%3A44Z",
			func(r *broker.PopRequest) {
				r.Group, r.SubscriptionMode, r.SubscriptionFrom = "billing", "new", "2026-07-30T09:12:44Z"
			}},
		{"empty consumerGroup is queue mode", "/api/v1/pop/queue/orders?consumerGroup=", func(r *broker.PopRequest) {}},
		{"plus in a query value is a space", "/api/v1/pop/queue/orders?consumerGroup=a+b", func(r *broker.PopRequest) { r.Group = "a b" }},
		{"namespace and task ignored on the queue route", "/api/v1/pop/queue/orders?namespace=n&task=t", func(r *broker.PopRequest) {}},
		{"queue name percent-decoded (spec 0.3)", "/api/v1/pop/queue/my%20queue%2Bx", func(r *broker.PopRequest) { r.Queue = "my queue+x" }},
		{"targeted pop ignores partitions", "/api/v1/pop/queue/orders/partition/cust%2D42?partitions=9",
			func(r *broker.PopRequest) { r.Partition = "cust-42" }},
		{"discovery pop carries the filters", "/api/v1/pop?namespace=billing&task=invoices&batch=3",
			func(r *broker.PopRequest) { r.Queue, r.Namespace, r.Task, r.Batch = "", "billing", "invoices", 3 }},
		{"discovery pop with only task", "/api/v1/pop?task=invoices",
			func(r *broker.PopRequest) { r.Queue, r.Task = "", "invoices" }},
		{"workerId passes through", "/api/v1/pop/queue/orders?workerId=w1", func(r *broker.PopRequest) { r.WorkerID = "w1" }},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("GET", c.path, "")
			require.Equal(t, 204, r.status, "%s", r.body)
			want := base
			c.want(&want)
			fake.mu.Lock()
			got := fake.popReq
			fake.mu.Unlock()
			require.Equal(t, want, got)
		})
	}
}

func TestPopTimeoutDefaultComesFromTheEnvironment(t *testing.T) {
	// seed 000: DEFAULT_TIMEOUT, then POP_DEFAULT_TIMEOUT_MS, then 30000.
	cases := []struct {
		name, defaultTimeout, popDefault string
		want                             time.Duration
	}{
		{"neither set", "", "", 30 * time.Second},
		{"DEFAULT_TIMEOUT wins", "1200", "3400", 1200 * time.Millisecond},
		{"POP_DEFAULT_TIMEOUT_MS next", "", "3400", 3400 * time.Millisecond},
		{"unparsable DEFAULT_TIMEOUT is skipped", "abc", "3400", 3400 * time.Millisecond},
		{"non-positive is skipped", "0", "", 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DEFAULT_TIMEOUT", c.defaultTimeout)
			t.Setenv("POP_DEFAULT_TIMEOUT_MS", c.popDefault)
			require.Equal(t, c.want, DefaultPopTimeoutFromEnv())
		})
	}
}

func TestPopBadInput(t *testing.T) {
	cases := []struct{ name, path, want string }{
		{"discovery pop without namespace or task (spec 3.1)", "/api/v1/pop?batch=1", "namespace or task is required"},
		{"discovery pop with empty filters", "/api/v1/pop?namespace=&task=", "namespace or task is required"},
		{"empty queue name", "/api/v1/pop/queue/", "Queue name must not be empty"},
		{"encoded slash in queue", "/api/v1/pop/queue/a%2Fb", "Queue name must not contain '/'"},
		{"dot-dot queue", "/api/v1/pop/queue/..", "Queue name must not be '.' or '..'"},
		{"encoded dot-dot queue", "/api/v1/pop/queue/%2E%2E", "Queue name must not be '.' or '..'"},
		{"NUL in queue", "/api/v1/pop/queue/a%00b", "Queue name must not contain NUL"},
		{"empty targeted partition", "/api/v1/pop/queue/q/partition/", "Partition name must not be empty"},
		{"dot-dot partition", "/api/v1/pop/queue/q/partition/..", "Partition name must not be '.' or '..'"},
		{"NUL in group", "/api/v1/pop/queue/q?consumerGroup=a%00", "Consumer group name must not contain NUL"},
		{"long group", "/api/v1/pop/queue/q?consumerGroup=" + strings.Repeat("g", 256), "Consumer group name must be at most 255 characters"},
		{"256 two-byte characters in a group", "/api/v1/pop/queue/q?consumerGroup=" + strings.Repeat("%C3%A9", 256), "Consumer group name must be at most 255 characters"},
		{"group not valid UTF-8", "/api/v1/pop/queue/q?consumerGroup=a%FFb", "Consumer group name must be valid UTF-8"},
		{"queue not valid UTF-8", "/api/v1/pop/queue/a%FFb", "Queue name must be valid UTF-8"},
		{"partition not valid UTF-8 (a lone surrogate)", "/api/v1/pop/queue/q/partition/a%ED%A0%80b", "Partition name must be valid UTF-8"},
		{"malformed escape", "/api/v1/pop/queue/a%zz", "Invalid percent-encoding in path"},
		{"discovery namespace over 255 characters (issue 10)", "/api/v1/pop?namespace=" + strings.Repeat("n", 256), "namespace must be at most 255 characters"},
		{"discovery task not valid UTF-8", "/api/v1/pop?task=a%FFb", "task must be valid UTF-8"},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("GET", c.path, "")
			requireJSON(t, r, 400, `{"error":`+quote(c.want)+`}`)
		})
	}
	require.NotContains(t, fake.callList(), "Pop")
}

func TestPopWithNothingAnswers204WithNoBodyAtAll(t *testing.T) {
	// seed 000: "204 with no body at all", no Content-Length either; CORS still present.
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/pop/queue/orders?wait=false", "")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.body)
	head, rest, found := strings.Cut(string(r.raw), "\r\n\r\n")
	require.True(t, found)
	require.Empty(t, rest, "bytes after the header block")
	for _, line := range strings.Split(strings.ToLower(head), "\r\n") {
		require.False(t, strings.HasPrefix(line, "content-length:"), line)
		require.False(t, strings.HasPrefix(line, "transfer-encoding:"), line)
		require.False(t, strings.HasPrefix(line, "content-type:"), line)
	}
	require.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
}

func TestPopEnvelopeAndMessagesField_by_field(t *testing.T) {
	// spec 3.3: envelope of the first claimed partition, per-message partitionId, leaseId,
	// consumerGroup, retryCount and queue; createdAt with 6 digits; payloads written unchanged.
	ts1 := int64(1785402764881042) // 2026-07-30T09:12:44.881042Z
	ts2 := int64(1785402765000007)
	fake := newFake()
	fake.onPop = func(_ context.Context, req broker.PopRequest) (broker.PopResult, error) {
		return broker.PopResult{
			Queue: "orders", Partition: "cust-42", PartitionID: "pid-1", LeaseID: "lease-1",
			Group: "billing", PartitionsClaimed: 2,
			Messages: []broker.Message{
				{ID: "m1", TransactionID: "t1", Payload: []byte(`{"orderId":91, "total":4200}`), CreatedAtMicros: ts1,
					Queue: "orders", Partition: "cust-42", PartitionID: "pid-1", RetryCount: 1, Offset: 7},
				{ID: "m2", TransactionID: "t\"2", TraceID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", ProducerSub: "alice",
					Payload: nil, CreatedAtMicros: ts1, Queue: "orders", Partition: "cust-42", PartitionID: "pid-1", RetryCount: 1},
				{ID: "m3", TransactionID: "t3", Payload: []byte(`"x"`), CreatedAtMicros: ts2,
					Queue: "orders", Partition: "cust-7", PartitionID: "pid-2"},
			},
		}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/pop/queue/orders?consumerGroup=billing&partitions=2", "")
	requireJSON(t, r, 200, `{"success":true,"queue":"orders","partition":"cust-42","partitionId":"pid-1",
	 "leaseId":"lease-1","consumerGroup":"billing","partitionsClaimed":2,"messages":[
	 {"id":"m1","transactionId":"t1","traceId":null,"data":{"orderId":91,"total":4200},"producerSub":null,
	  "createdAt":"2026-07-30T09:12:44.881042Z","partitionId":"pid-1","partition":"cust-42","leaseId":"lease-1",
	  "consumerGroup":"billing","retryCount":1,"queue":"orders"},
	 {"id":"m2","transactionId":"t\"2","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","data":null,"producerSub":"alice",
	  "createdAt":"2026-07-30T09:12:44.881042Z","partitionId":"pid-1","partition":"cust-42","leaseId":"lease-1",
	  "consumerGroup":"billing","retryCount":1,"queue":"orders"},
	 {"id":"m3","transactionId":"t3","traceId":null,"data":"x","producerSub":null,
	  "createdAt":"2026-07-30T09:12:45.000007Z","partitionId":"pid-2","partition":"cust-7","leaseId":"lease-1",
	  "consumerGroup":"billing","retryCount":0,"queue":"orders"}]}`)
	require.Contains(t, string(r.body), `"data":{"orderId":91, "total":4200}`, "payload bytes unchanged")
}

func TestPopEnvelopeDefaultsTheGroupToQueueMode(t *testing.T) {
	fake := newFake()
	fake.onPop = func(_ context.Context, req broker.PopRequest) (broker.PopResult, error) {
		return broker.PopResult{Queue: "", Partition: "Default", PartitionID: "p", PartitionsClaimed: 1,
			Messages: []broker.Message{{ID: "m", TransactionID: "t", Payload: []byte("1"), CreatedAtMicros: 1, Queue: "a.b", Partition: "Default", PartitionID: "p"}}}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/pop?namespace=a&autoAck=true", "")
	requireJSON(t, r, 200, `{"success":true,"queue":"","partition":"Default","partitionId":"p","leaseId":"",
	 "consumerGroup":"__QUEUE_MODE__","partitionsClaimed":1,"messages":[{"id":"m","transactionId":"t","traceId":null,
	 "data":1,"producerSub":null,"createdAt":"1970-01-01T00:00:00.000001Z","partitionId":"p","partition":"Default",
	 "leaseId":"","consumerGroup":"__QUEUE_MODE__","retryCount":0,"queue":"a.b"}]}`)
}

func TestShutdownAnswersParkedPopsWith204(t *testing.T) {
	// issue 4 "comb serve": SIGTERM answers parked pops with 204 before the broker closes.
	fake := newFake()
	parked := make(chan struct{})
	fake.onPop = func(ctx context.Context, req broker.PopRequest) (broker.PopResult, error) {
		close(parked)
		<-ctx.Done()
		return broker.PopResult{}, ctx.Err()
	}
	ts := startServer(t, fake, Config{})
	got := make(chan response, 1)
	go func() { got <- ts.do("GET", "/api/v1/pop/queue/q?wait=true&timeout=60000", "") }()
	<-parked
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	select {
	case r := <-got:
		require.Equal(t, 204, r.status)
		require.Empty(t, r.body)
	case <-time.After(10 * time.Second):
		t.Fatal("parked pop was not answered on shutdown")
	}
	require.NoError(t, <-done)
}
