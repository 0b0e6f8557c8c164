package httpapi

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestMaintenanceRouteShapes(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"GET reports both modes and the buffer", "GET", "/api/v1/system/maintenance", "", 200,
			`{"maintenanceMode":false,"popMaintenanceMode":true,"bufferedMessages":7,"bufferHealthy":true,"bufferStats":{"heldPartitions":2}}`},
		{"POST switches push maintenance", "POST", "/api/v1/system/maintenance", `{"enabled":true}`, 200,
			`{"maintenanceMode":true,"bufferedMessages":7,"bufferHealthy":true,"message":"Maintenance mode is on: pushes are stored and become visible when it is switched off"}`},
		{"POST without enabled is refused", "POST", "/api/v1/system/maintenance", `{}`, 400, `{"error":"enabled (boolean) is required"}`},
		{"POST with a string enabled is refused", "POST", "/api/v1/system/maintenance", `{"enabled":"true"}`, 400, `{"error":"enabled (boolean) is required"}`},
		{"POST with an empty body is refused (spec 0.1)", "POST", "/api/v1/system/maintenance", ``, 400, `{"error":"Empty request body"}`},
		{"GET pop maintenance", "GET", "/api/v1/system/maintenance/pop", "", 200,
			`{"popMaintenanceMode":true,"message":"Pop maintenance mode is on: every pop answers 204 with no messages"}`},
		{"POST pop maintenance off", "POST", "/api/v1/system/maintenance/pop", `{"enabled":false}`, 200,
			`{"popMaintenanceMode":false,"message":"Pop maintenance mode is off"}`},
		{"unknown sub-route is 404", "GET", "/api/v1/system/maintenance/other", "", 404, `{"error":"Not Found"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			fake.maint = broker.MaintenanceStatus{PopMaintenance: true, BufferedMessages: 7, HeldPartitions: 2}
			ts := startServer(t, fake, Config{})
			requireJSON(t, ts.do(c.method, c.path, c.body), c.status, c.want)
		})
	}
}

func TestMaintenanceSwitchFailureIs500(t *testing.T) {
	fake := newFake()
	fake.maintErr = errors.New("disk full")
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/system/maintenance", `{"enabled":true}`)
	assert.Equal(t, 500, r.status)
}

func TestBufferedPushItemOmitsAnAbsentTransactionID(t *testing.T) {
	fake := newFake()
	fake.onPush = func(items []broker.PushItem) ([]broker.PushResult, error) {
		return []broker.PushResult{{Status: broker.PushBuffered, Queue: "q", Partition: "Default"}}, nil
	}
	ts := startServer(t, fake, Config{})
	requireJSON(t, ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q","payload":1}]}`), 201,
		`[{"index":0,"status":"buffered","queue":"q","partition":"Default"}]`)
}

// The JS maintenance test's flow against the real broker: pushes during maintenance answer
// buffered, pops see nothing, bufferedMessages reaches 0 after switching off, and each message
// is consumed exactly once.
func TestMaintenanceFlowAgainstTheRealBroker(t *testing.T) {
	ts := startRealServer(t)
	require.Equal(t, 200, ts.do("POST", "/api/v1/system/maintenance", `{"enabled":true}`).status)
	requireJSON(t, ts.do("POST", "/api/v1/push", `{"items":[{"queue":"m","transactionId":"a","payload":1},{"queue":"m","transactionId":"b","payload":2}]}`), 201,
		`[{"index":0,"status":"buffered","transaction_id":"a","transactionId":"a","queue":"m","partition":"Default"},
		  {"index":1,"status":"buffered","transaction_id":"b","transactionId":"b","queue":"m","partition":"Default"}]`)
	assert.Equal(t, 204, ts.do("GET", "/api/v1/pop/queue/m?batch=10", "").status)
	assert.Equal(t, float64(2), ts.do("GET", "/api/v1/system/maintenance", "").json(t).(map[string]any)["bufferedMessages"])

	off := ts.do("POST", "/api/v1/system/maintenance", `{"enabled":false}`).json(t).(map[string]any)
	assert.Equal(t, float64(0), off["bufferedMessages"])
	r := ts.do("GET", "/api/v1/pop/queue/m?batch=10&autoAck=true", "")
	require.Equal(t, 200, r.status)
	msgs := r.json(t).(map[string]any)["messages"].([]any)
	require.Len(t, msgs, 2)
	assert.Equal(t, "a", msgs[0].(map[string]any)["transactionId"])
	assert.Equal(t, 204, ts.do("GET", "/api/v1/pop/queue/m?batch=10", "").status)

	require.Equal(t, 200, ts.do("POST", "/api/v1/system/maintenance/pop", `{"enabled":true}`).status)
	ts.do("POST", "/api/v1/push", `{"items":[{"queue":"m","transactionId":"c","payload":3}]}`)
	for _, path := range []string{"/api/v1/pop/queue/m", "/api/v1/pop/queue/m/partition/Default", "/api/v1/pop?namespace=m", "/api/v1/pop/queue/m?wait=true&timeout=60000"} {
		r := ts.do("GET", path, "")
		assert.Equal(t, 204, r.status, path)
		assert.Empty(t, r.body, path)
	}
}

// spec 8.8: while pop maintenance is on, every pop answers a bodiless 204, even a
// discovery pop without filters (otherwise 400, spec 3.1).
func TestPopMaintenanceWinsOverTheDiscoveryFilterRule(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	require.Equal(t, 400, ts.do("GET", "/api/v1/pop?batch=1", "").status)
	_, err := fake.SetPopMaintenance(true)
	require.NoError(t, err)
	r := ts.do("GET", "/api/v1/pop?batch=1", "")
	assert.Equal(t, 204, r.status)
	assert.Empty(t, r.body)
}
