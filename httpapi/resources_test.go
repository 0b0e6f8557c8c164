package httpapi

import (
	"testing"
	"time"

	"github.com/combmq/comb/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var resTime = time.Date(2026, 7, 30, 9, 12, 44, 881042000, time.UTC).UnixMicro()

func TestResourceRouteShapes(t *testing.T) {
	counts := report.MessageCounts{Total: 6, Pending: 3, Processing: 1, Completed: 2, DeadLetter: 1}
	q := report.ResourceQueue{ID: "q-id", Name: "orders", Namespace: "shop", CreatedAtMicros: resTime, Partitions: 1, Messages: counts}
	fake := newFake()
	fake.overview = report.ResourceOverview{Queues: 1, Partitions: 1, Namespaces: 1, Messages: counts,
		TimeLagSeconds: report.LagStats{Avg: 1.5, Median: 1.5, Min: 1, Max: 2}, OffsetLag: report.LagStats{Avg: 4, Median: 4, Min: 4, Max: 4},
		IngestedPerSecond: 10.12345, NowMicros: resTime}
	fake.resQueues = []report.ResourceQueue{q}
	fake.resDetail = map[string]report.ResourceQueueDetail{"orders": {ResourceQueue: q, PartitionList: []report.ResourcePartition{
		{ID: "p-id", Name: "Default", CreatedAtMicros: resTime, Stats: counts, OldestMicros: resTime},
	}}}
	fake.namespaces = []report.ResourceLabel{{Name: "shop", Queues: 1, Partitions: 1, Messages: counts}}
	ts := startServer(t, fake, Config{})
	const allCounts = `{"total":6,"pending":3,"processing":1,"completed":2,"failed":0,"deadLetter":1}`
	cases := []struct {
		name, path string
		status     int
		want       string
	}{
		{"overview", "/api/v1/resources/overview", 200, `{"queues":1,"partitions":1,"namespaces":1,"tasks":0,"messages":` + allCounts + `,
			"lag":{"time":{"avg":1.5,"median":1.5,"min":1,"max":2},"offset":{"avg":4,"median":4,"min":4,"max":4}},
			"throughput":{"ingestedPerSecond":10.123,"processedPerSecond":0},"timestamp":"2026-07-30T09:12:44.881Z","statsAge":0}`},
		{"queue list", "/api/v1/resources/queues", 200, `{"queues":[{"id":"q-id","name":"orders","namespace":"shop","task":"",
			"createdAt":"2026-07-30T09:12:44.881Z","partitions":1,"messages":{"total":6,"pending":3,"processing":1}}]}`},
		{"queue detail", "/api/v1/resources/queues/orders", 200, `{"id":"q-id","name":"orders","namespace":"shop","task":"",
			"createdAt":"2026-07-30T09:12:44.881Z","partitions":[{"id":"p-id","name":"Default","createdAt":"2026-07-30T09:12:44.881Z",
			"stats":` + allCounts + `,"oldestMessage":"2026-07-30T09:12:44.881Z","newestMessage":null}],"partitionCount":1,"totals":` + allCounts + `}`},
		{"unknown queue is 404", "/api/v1/resources/queues/nope", 404, `{"error":"Queue not found"}`},
		{"namespaces", "/api/v1/resources/namespaces", 200, `{"namespaces":[{"namespace":"shop","queues":1,"partitions":1,"messages":{"total":6,"pending":3}}]}`},
		{"no tasks is an empty array", "/api/v1/resources/tasks", 200, `{"tasks":[]}`},
		{"partitions route was never implemented by Queen", "/api/v1/resources/partitions", 404, `{"error":"Not Found"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireJSON(t, ts.do("GET", c.path, ""), c.status, c.want) })
	}
}

func TestResourceQueuesPassesFilterAndPaging(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	requireJSON(t, ts.do("GET", "/api/v1/resources/queues?namespace=ns&task=t&limit=5&offset=10", ""), 200, `{"queues":[]}`)
	assert.Equal(t, report.ResourceFilter{Namespace: "ns", Task: "t", Limit: 5, Offset: 10}, fake.resFilter)
}

func TestResourcesAgainstTheRealBroker(t *testing.T) {
	ts := startRealServer(t)
	require.Equal(t, 201, ts.do("POST", "/api/v1/push", `{"items":[{"queue":"shop.orders","payload":1},{"queue":"shop.orders","payload":2}]}`).status)
	d := ts.do("GET", "/api/v1/resources/queues/shop.orders", "").json(t).(map[string]any)
	assert.Equal(t, map[string]any{"total": 2.0, "pending": 2.0, "processing": 0.0, "completed": 0.0, "failed": 0.0, "deadLetter": 0.0}, d["totals"])
	assert.Equal(t, "orders", d["task"])
	o := ts.do("GET", "/api/v1/resources/overview", "").json(t).(map[string]any)
	assert.Equal(t, 1.0, o["queues"])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, o["timestamp"])
}

// The queue detail's partition list is a page: limit (default and at most 10,000) from offset.
func TestQueueDetailPartitionPage(t *testing.T) {
	fake := newFake()
	fake.resDetail = map[string]report.ResourceQueueDetail{"orders": {}}
	ts := startServer(t, fake, Config{})
	cases := []struct {
		query string
		want  report.PartitionPage
	}{
		{"", report.PartitionPage{Limit: 10000}},
		{"?limit=2&offset=1", report.PartitionPage{Offset: 1, Limit: 2}},
		{"?limit=99999", report.PartitionPage{Limit: 10000}},
		{"?limit=0&offset=-5", report.PartitionPage{Limit: 10000}},
		{"?limit=abc&offset=7", report.PartitionPage{Offset: 7, Limit: 10000}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			require.Equal(t, 200, ts.do("GET", "/api/v1/resources/queues/orders"+c.query, "").status)
			fake.mu.Lock()
			got := fake.resPage
			fake.mu.Unlock()
			require.Equal(t, c.want, got)
		})
	}
}
