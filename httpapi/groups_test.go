package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
)

func TestLeaseExtendIsAlways200ObjectAndDefaultsTo60Seconds(t *testing.T) {
	// spec 6, 11 #6, #7: absent, empty, {} or non-positive seconds mean 60.
	cases := []struct {
		name, body string
		seconds    int64
	}{
		{"no body", "", 60},
		{"empty object (all clients)", "{}", 60},
		{"seconds 120", `{"seconds":120}`, 120},
		{"seconds as a numeric string", `{"seconds":"90"}`, 90},
		{"zero", `{"seconds":0}`, 60},
		{"negative", `{"seconds":-5}`, 60},
		{"null", `{"seconds":null}`, 60},
		{"an integral number in exponent form", `{"seconds":1e3}`, 1000},
		{"other fields are ignored", `{"seconds":30,"leaseId":"x"}`, 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			fake.extendRes = broker.ExtendResult{Renewed: 3, NewExpiresAtMicros: 1785402884881000}
			ts := startServer(t, fake, Config{})
			r := ts.do("POST", "/api/v1/lease/0198e4c2-aa/extend", c.body)
			requireJSON(t, r, 200, `{"success":true,"renewed":3,"leaseId":"0198e4c2-aa",
			 "newExpiresAt":"2026-07-30T09:14:44.881Z","expiresAt":"2026-07-30T09:14:44.881Z","error":null}`)
			require.Equal(t, c.seconds, fake.extendSec)
			require.Equal(t, "0198e4c2-aa", fake.extendID)
		})
	}
}

// Issue 10: a `seconds` that is not an integer used to mean 60 s without a word; it is 400 now,
// and the broker is not called.
func TestLeaseExtendRefusesSecondsThatAreNotIntegers(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"a fraction", `{"seconds":5400.5}`, "seconds must be an integer"},
		{"1e30", `{"seconds":1e30}`, "seconds must be an integer"},
		{"past int64", `{"seconds":99999999999999999999}`, "seconds must be an integer"},
		{"not a number", `{"seconds":"abc"}`, "seconds must be an integer"},
		{"an empty string", `{"seconds":""}`, "seconds must be an integer"},
		{"a boolean", `{"seconds":true}`, "seconds must be an integer"},
		{"an object", `{"seconds":{}}`, "seconds must be an integer"},
		{"unparsable body (spec 0.1)", `{"seconds":`, "Invalid JSON: "},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/lease/0198e4c2-aa/extend", c.body)
			require.Equal(t, 400, r.status, "%s", r.body)
			msg := r.json(t).(map[string]any)["error"].(string)
			if c.want == "Invalid JSON: " {
				require.Contains(t, msg, c.want)
			} else {
				require.Equal(t, c.want, msg)
			}
		})
	}
	require.NotContains(t, fake.callList(), "ExtendLease")
}

func TestLeaseExtendOfADeadLeaseReportsIt(t *testing.T) {
	fake := newFake()
	fake.extendRes = broker.ExtendResult{Error: "Lease already expired"}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/lease/L%2D1/extend", "{}")
	requireJSON(t, r, 200, `{"success":false,"renewed":0,"leaseId":"L-1","newExpiresAt":null,"expiresAt":null,
	 "error":"Lease already expired"}`)
}

func TestSeekRoutes(t *testing.T) {
	fake := newFake()
	fake.seekRes = broker.SeekResult{PartitionsUpdated: 12}
	ts := startServer(t, fake, Config{})

	r := ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/seek", `{"timestamp":"2026-07-30T00:00:00Z"}`)
	requireJSON(t, r, 200, `{"success":true,"consumerGroup":"billing","queueName":"orders","seekToEnd":false,
	 "targetTimestamp":"2026-07-30T00:00:00.000Z","partitionsUpdated":12}`)
	require.Equal(t, []any{"billing", "orders", false, int64(1785369600000000)}, fake.seekArgs)

	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/seek", `{"toEnd":true}`)
	requireJSON(t, r, 200, `{"success":true,"consumerGroup":"billing","queueName":"orders","seekToEnd":true,
	 "targetTimestamp":null,"partitionsUpdated":12}`)

	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/seek", `{"toEnd":false}`)
	requireJSON(t, r, 400, `{"error":"Must specify either 'toEnd': true or 'timestamp'"}`)
	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/seek", `{"timestamp":"yesterday"}`)
	requireJSON(t, r, 400, `{"error":"Invalid timestamp: must be ISO-8601"}`)
	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/seek", `{"toEnd":true,"timestamp":"2026-07-30T00:00:00Z"}`)
	requireJSON(t, r, 400, `{"error":"Specify either 'toEnd': true or 'timestamp', not both"}`) // spec 7.1: exactly one
	r = ts.do("POST", "/api/v1/consumer-groups/billing%2Feu/queues/orders/seek", `{"toEnd":true}`)
	require.Equal(t, 200, r.status, "spec 0.4: a group name may hold '/': %s", r.body)

	fake.pseekRes = broker.PartitionSeekResult{Updated: true, CursorMovedToMicros: 1785402764881042}
	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/partitions/cust%2042/seek", "")
	requireJSON(t, r, 200, `{"success":true,"consumerGroup":"billing","queueName":"orders","partitionName":"cust 42",
	 "updated":true,"cursorMovedTo":"2026-07-30T09:12:44.881Z"}`)

	fake.deleteErr = broker.NotFound("Partition not found")
	r = ts.do("POST", "/api/v1/consumer-groups/billing/queues/orders/partitions/nope/seek", "")
	requireJSON(t, r, 404, `{"error":"Partition not found"}`)
}

func TestDeleteGroupAndQueue(t *testing.T) {
	fake := newFake()
	fake.deletedN = 4
	fake.existed = true
	ts := startServer(t, fake, Config{})

	r := ts.do("DELETE", "/api/v1/consumer-groups/billing", "")
	requireJSON(t, r, 200, `{"success":true,"consumerGroup":"billing","deletedPartitions":4,"metadataDeleted":true}`)
	require.Equal(t, []any{"billing", "", true}, fake.delArgs)

	r = ts.do("DELETE", "/api/v1/consumer-groups/billing/queues/orders?deleteMetadata=false", "")
	requireJSON(t, r, 200, `{"success":true,"consumerGroup":"billing","queueName":"orders","deletedPartitions":4,"metadataDeleted":false}`)
	require.Equal(t, []any{"billing", "orders", false}, fake.delArgs)

	r = ts.do("DELETE", "/api/v1/resources/queues/orders", "")
	requireJSON(t, r, 200, `{"deleted":true,"queue":"orders","existed":true}`)

	r = ts.do("DELETE", "/api/v1/resources/queues/%00", "")
	requireJSON(t, r, 400, `{"error":"Queue name must not contain NUL"}`)
}

func TestConsumerGroupsListIsAnArraySortedByGroupThenQueue(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/consumer-groups", "")
	requireJSON(t, r, 200, `[]`)

	fake.groups = []report.GroupSummary{
		{Name: "zeta", Queue: "a", Members: 1, State: "Dead"},
		{Name: "billing", Queue: "orders", Members: 3, PartitionsWithLag: 2, TotalLag: 17, MaxTimeLagSeconds: 400,
			State: "Lagging", SubscriptionMode: "new", SubscriptionMicros: 1785402764881042, SubscriptionCreatedAt: 1785402764881042},
	}
	r = ts.do("GET", "/api/v1/consumer-groups", "")
	requireJSON(t, r, 200, `[
	 {"name":"billing","topics":["orders"],"queueName":"orders","members":3,"partitionsWithLag":2,"totalLag":17,
	  "maxTimeLag":400,"state":"Lagging","subscriptionMode":"new","subscriptionTimestamp":"2026-07-30T09:12:44.881Z",
	  "subscriptionCreatedAt":"2026-07-30T09:12:44.881Z"},
	 {"name":"zeta","topics":["a"],"queueName":"a","members":1,"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,
	  "state":"Dead","subscriptionMode":null,"subscriptionTimestamp":null,"subscriptionCreatedAt":null}]`)
}

func TestDLQListingHonoursEveryFilter(t *testing.T) {
	fake := newFake()
	fake.dlqEntries = []report.DLQEntry{{ID: "m", TransactionID: "t", PartitionID: "p", Queue: "orders", Partition: "Default",
		Group: "__QUEUE_MODE__", ErrorMessage: "Test error - triggering DLQ", RetryCount: 1, Payload: []byte(`{"message":"x"}`),
		CreatedAtMicros: 1785402764881042, FailedAtMicros: 1785402782120000}}
	fake.dlqTotal = 1
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/dlq?queue=orders&consumerGroup=g&partition=Default&from=2026-07-30T00:00:00Z&to=2026-07-31T00:00:00Z&limit=5&offset=10", "")
	requireJSON(t, r, 200, `{"messages":[{"id":"m","transactionId":"t","partitionId":"p","queue":"orders",
	 "partition":"Default","consumerGroup":"__QUEUE_MODE__","errorMessage":"Test error - triggering DLQ",
	 "retryCount":1,"data":{"message":"x"},"producerSub":null,"createdAt":"2026-07-30T09:12:44.881Z",
	 "failedAt":"2026-07-30T09:13:02.120Z"}],"total":1,"pagination":{"limit":5,"offset":10}}`)
	require.Equal(t, report.DLQFilter{Queue: "orders", Group: "g", Partition: "Default",
		FromMicros: 1785369600000000, ToMicros: 1785456000000000, Limit: 5, Offset: 10}, fake.dlqFilter)

	r = ts.do("GET", "/api/v1/dlq?limit=x", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, 100, fake.dlqFilter.Limit, "unparsable limit falls back to 100 (spec 8.6)")
	r = ts.do("GET", "/api/v1/dlq?from=bad", "")
	requireJSON(t, r, 400, `{"error":"Invalid from timestamp: must be ISO-8601"}`)
}
