package httpapi

import (
	"testing"

	"github.com/combmq/comb/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec 7.6: GET /api/v1/consumer-groups/:group is an object keyed by queue; {} for an unknown group.
func TestGroupDetailIsKeyedByQueue(t *testing.T) {
	fake := newFake()
	fake.detail = []report.GroupPartition{
		{Queue: "a", Partition: "p1", WorkerID: "w1", LastConsumedAtMicros: 1785402764881042, TotalConsumed: 7, OffsetLag: 3, TimeLagSeconds: 12, LeaseActive: true},
		{Queue: "a", Partition: "p/2", TotalConsumed: 0},
		{Queue: "b", Partition: "Default", TotalConsumed: 1},
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/consumer-groups/billing%2Feu", "")
	requireJSON(t, r, 200, `{"a":{"partitions":[
	  {"partition":"p1","workerId":"w1","lastConsumedAt":"2026-07-30T09:12:44.881Z","totalConsumed":7,"offsetLag":3,"timeLagSeconds":12,"leaseActive":true},
	  {"partition":"p/2","workerId":null,"lastConsumedAt":null,"totalConsumed":0,"offsetLag":0,"timeLagSeconds":0,"leaseActive":false}]},
	 "b":{"partitions":[
	  {"partition":"Default","workerId":null,"lastConsumedAt":null,"totalConsumed":1,"offsetLag":0,"timeLagSeconds":0,"leaseActive":false}]}}`)
	assert.Contains(t, fake.callList(), "GroupDetail:billing/eu", "the path parameter is percent-decoded; '/' is allowed in group names")

	fake.detail = nil
	requireJSON(t, ts.do("GET", "/api/v1/consumer-groups/nobody", ""), 200, `{}`)
}

// spec 7.6 and the route table: /consumer-groups/lagging wins over /:group; snake_case rows.
func TestLaggingGroupsRoute(t *testing.T) {
	fake := newFake()
	fake.lagging = []report.LaggingPartition{{Group: "g", GroupPartition: report.GroupPartition{Queue: "q", Partition: "p",
		PartitionID: "0198e4c2-0000-7000-8000-000000000001", OffsetLag: 5, TimeLagSeconds: 5400,
		OldestUnconsumedAtMicros: 1785402764881042}}}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=60", "")
	requireJSON(t, r, 200, `[{"consumer_group":"g","queue_name":"q","partition_name":"p",
	  "partition_id":"0198e4c2-0000-7000-8000-000000000001","worker_id":null,"offset_lag":5,"time_lag_seconds":5400,
	  "lag_hours":1.5,"oldest_unconsumed_at":"2026-07-30T09:12:44.881Z","last_consumed_at":null}]`)
	assert.Equal(t, int64(60), fake.lagArg)
	assert.NotContains(t, fake.callList(), "GroupDetail:lagging")

	fake.lagging = nil
	requireJSON(t, ts.do("GET", "/api/v1/consumer-groups/lagging", ""), 200, `[]`)
	assert.Equal(t, int64(3600), fake.lagArg, "default minLagSeconds")
}

// spec 7.5: POST /api/v1/consumer-groups/:group/subscription.
func TestSetSubscriptionRoute(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"rewrites the timestamp", `{"subscriptionTimestamp":"2026-07-30T09:12:44.881Z"}`, 200,
			`{"success":true,"consumerGroup":"g","newTimestamp":"2026-07-30T09:12:44.881Z","rowsUpdated":2}`},
		{"spec 7.5: missing field", `{}`, 400, `{"error":"Missing subscriptionTimestamp in request body"}`},
		{"spec 7.5: empty body", ``, 400, `{"error":"Missing subscriptionTimestamp in request body"}`},
		{"not a string", `{"subscriptionTimestamp":5}`, 400, `{"error":"Missing subscriptionTimestamp in request body"}`},
		{"unparsable", `{"subscriptionTimestamp":"yesterday"}`, 400, `{"error":"Invalid subscriptionTimestamp: must be ISO-8601"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			fake.subN = 2
			ts := startServer(t, fake, Config{})
			requireJSON(t, ts.do("POST", "/api/v1/consumer-groups/g/subscription", c.body), c.status, c.want)
			if c.status == 200 {
				require.Equal(t, []any{"g", int64(1785402764881000)}, fake.subArgs)
			}
		})
	}
}

// spec 8.4: POST /api/v1/stats/refresh may be a no-op answering {"success":true}.
func TestStatsRefreshRoute(t *testing.T) {
	ts := startServer(t, newFake(), Config{})
	requireJSON(t, ts.do("POST", "/api/v1/stats/refresh", ""), 200, `{"success":true}`)
}

// The routes of spec 7.5, 7.6 and 8.4 over real HTTP against the real broker.
func TestGroupRoutesAgainstTheRealBroker(t *testing.T) {
	ts, _ := startRealServerWithBroker(t)
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"gq","partition":"p1","transactionId":"a","payload":1},
	 {"queue":"gq","partition":"p1","transactionId":"b","payload":2},{"queue":"gq","partition":"p2","transactionId":"c","payload":3}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/pop/queue/gq/partition/p1?consumerGroup=g&batch=1&workerId=w7", "")
	require.Equal(t, 200, r.status, "%s", r.body)

	r = ts.do("GET", "/api/v1/consumer-groups/g", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	parts := r.json(t).(map[string]any)["gq"].(map[string]any)["partitions"].([]any)
	require.Len(t, parts, 1, "a targeted pop seeds only its partition")
	p1 := parts[0].(map[string]any)
	assert.Equal(t, "p1", p1["partition"])
	assert.Equal(t, "w7", p1["workerId"])
	assert.Equal(t, true, p1["leaseActive"])
	assert.Equal(t, float64(2), p1["offsetLag"])
	assert.Nil(t, p1["lastConsumedAt"])

	r = ts.do("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=-1", "")
	require.Equal(t, 200, r.status, "%s", r.body)
	rows := r.json(t).([]any)
	require.Len(t, rows, 1)
	assert.Equal(t, "g", rows[0].(map[string]any)["consumer_group"])
	assert.Equal(t, "p1", rows[0].(map[string]any)["partition_name"])

	requireJSON(t, ts.do("GET", "/api/v1/consumer-groups/lagging", ""), 200, `[]`)
	requireJSON(t, ts.do("GET", "/api/v1/consumer-groups/nobody", ""), 200, `{}`)

	require.Equal(t, 204, ts.do("GET", "/api/v1/pop/queue/other?consumerGroup=g&subscriptionMode=new", "").status)
	requireJSON(t, ts.do("POST", "/api/v1/consumer-groups/g/subscription", `{"subscriptionTimestamp":"2020-01-01T00:00:00Z"}`), 200,
		`{"success":true,"consumerGroup":"g","newTimestamp":"2020-01-01T00:00:00.000Z","rowsUpdated":1}`)
	requireJSON(t, ts.do("POST", "/api/v1/stats/refresh", "{}"), 200, `{"success":true}`)
}
