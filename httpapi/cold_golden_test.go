package httpapi

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var updateCold = flag.Bool("update-cold", false, "rewrite testdata/cold_routes.golden from the current encoders")

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalizeIDs replaces each distinct UUID with <id-N>, N in order of first appearance.
func normalizeIDs(s string) string {
	seen := map[string]string{}
	return uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if n, ok := seen[u]; ok {
			return n
		}
		seen[u] = "<id-" + strconv.Itoa(len(seen)+1) + ">"
		return seen[u]
	})
}

// The cold admin routes answer byte for byte what they answered before they
// were moved from hand-appended bytes to typed structs (issue 13): names that
// need escaping (HTML characters, control characters, U+2028, non-ASCII),
// labels, counts, lags, rates and timestamps, against a golden file written by
// the hand-appended encoders (go test -run TestColdRoutesBytes -update-cold).
func TestColdRoutesBytes(t *testing.T) {
	clk := &statusClock{t: time.Date(2026, 7, 30, 9, 0, 10, 0, time.UTC)}
	ts, _ := startStatusServer(t, t.TempDir(), clk)
	require.Equal(t, 200, ts.do("POST", "/api/v1/configure", `{"queue":"shop.bill","options":{"retryLimit":0}}`).status)
	r := ts.do("POST", "/api/v1/push", `{"items":[
	 {"queue":"shop.bill","partition":"p1","transactionId":"a","payload":1},
	 {"queue":"shop.bill","partition":"p1","transactionId":"b","payload":2},
	 {"queue":"shop.bill","partition":"<p&2>","transactionId":"c","payload":3},
	 {"queue":"x\u2028y.t\bz","partition":"é\tp","transactionId":"d","payload":4},
	 {"queue":"plain","transactionId":"e","payload":5},
	 {"queue":"g<&>","partition":"<b>","transactionId":"h","payload":0}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	clk.Advance(1500 * time.Millisecond)
	require.Equal(t, 200, ts.do("GET", "/api/v1/resources/overview", "").status) // starts the rate sample
	pop := obj(t, ts.do("GET", "/api/v1/pop/queue/shop.bill/partition/p1?batch=2", ""))
	m := pop["messages"].([]any)[0].(map[string]any)
	ack := `{"transactionId":"a","partitionId":"` + m["partitionId"].(string) + `","leaseId":"` + pop["leaseId"].(string) + `","status":"failed"}`
	require.Equal(t, 200, ts.do("POST", "/api/v1/ack", ack).status)
	require.Equal(t, 200, ts.do("GET", "/api/v1/pop/queue/x%E2%80%A8y.t%08z?consumerGroup=g1&autoAck=true", "").status)
	require.Equal(t, 200, ts.do("GET", "/api/v1/pop/queue/g%3C%26%3E?consumerGroup=h%3Ci%3E&autoAck=true", "").status)
	clk.Advance(2 * time.Second)

	var out strings.Builder
	for _, path := range []string{
		"/api/v1/resources/overview", "/api/v1/resources/queues", "/api/v1/resources/queues?namespace=shop&limit=1",
		"/api/v1/resources/queues/shop.bill", "/api/v1/resources/queues/x%E2%80%A8y.t%08z", "/api/v1/resources/queues/nope",
		"/api/v1/resources/namespaces", "/api/v1/resources/tasks",
		"/api/v1/consumer-groups", "/api/v1/consumer-groups/g1", "/api/v1/consumer-groups/__QUEUE_MODE__",
		"/api/v1/consumer-groups/lagging?minLagSeconds=1", "/api/v1/consumer-groups/nobody", "/api/v1/consumer-groups/h%3Ci%3E",
	} {
		r := ts.do("GET", path, "")
		out.WriteString("GET " + path + " -> " + strconv.Itoa(r.status) + "\n" + string(r.body) + "\n\n")
	}
	got := normalizeIDs(out.String())
	golden := filepath.Join("testdata", "cold_routes.golden")
	if *updateCold {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}
