package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// startRealServerWithBroker is startRealServer that also hands back the broker, for tests that
// look at its Stats: on a cluster the leader's, which parks the pops a follower forwards.
func startRealServerWithBroker(t *testing.T) (*testServer, *broker.Broker) {
	t.Helper()
	ts, b, _ := serveReal(t, broker.Config{DataDir: t.TempDir(), Sync: "never", Logger: zerolog.Nop()})
	return ts, b
}

// spec 3.6: "A client disconnect cancels the parked pop; nothing may stay claimed." A long-poll
// whose client hung up used to stay parked until its timeout and then lease the next pushed
// message to nobody.
func TestLongPollOfADisconnectedClientIsCancelledAndClaimsNothing(t *testing.T) {
	cases := []struct {
		name string
		path string
	}{
		{"wildcard", "/api/v1/pop/queue/dq?consumerGroup=g&wait=true&timeout=60000"},
		{"targeted", "/api/v1/pop/queue/dq/partition/p?consumerGroup=g&wait=true&timeout=60000"},
		{"discovery", "/api/v1/pop?namespace=ns&consumerGroup=g&wait=true&timeout=60000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, b := startRealServerWithBroker(t)
			parkThenHangUp(t, ts, b, c.path)
			require.Eventually(t, func() bool { return b.View().Counters().ParkedPops == 0 }, 5*time.Second, 5*time.Millisecond,
				"the parked pop ends when its client disconnects")
			requirePushNotClaimedForIt(t, ts)
		})
	}
}

// spec 3.6 again, without waiting for the parked pop to end: a message pushed right after the
// client hung up is not claimed for it. On one node the broker peeks the client's socket right
// before it claims; through a follower (COMB_TEST_TARGET=follower) it peeks the follower's
// connection, which the follower must close the moment its client leaves
// (watchForwardedClient): with a timed disconnect poll (150 ms then) this failed every time.
func TestMessagePushedRightAfterALongPollClientLeftIsNotClaimedForIt(t *testing.T) {
	ts, b := startRealServerWithBroker(t)
	parkThenHangUp(t, ts, b, "/api/v1/pop/queue/dq/partition/p?consumerGroup=g&wait=true&timeout=60000")
	requirePushNotClaimedForIt(t, ts)
}

// parkThenHangUp configures queue dq (namespace ns), sends the long-poll path on a raw
// connection, waits until the broker has it parked and closes the connection.
func parkThenHangUp(t *testing.T, ts *testServer, b *broker.Broker, path string) {
	t.Helper()
	requireJSONStatus(t, ts.do("POST", "/api/v1/configure", `{"queue":"dq","namespace":"ns"}`), 200)
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, conn.Close())
}

// requirePushNotClaimedForIt pushes m1 to dq/p and requires the next pop of group g to get
// it: the long-poll whose client left did not lease it.
func requirePushNotClaimedForIt(t *testing.T, ts *testServer) {
	t.Helper()
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"dq","partition":"p","transactionId":"m1","payload":1}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/pop/queue/dq?consumerGroup=g", "")
	require.Equal(t, 200, r.status, "the message is not leased to the client that left")
	msgs := r.json(t).(map[string]any)["messages"].([]any)
	require.Len(t, msgs, 1)
	assert.Equal(t, "m1", msgs[0].(map[string]any)["transactionId"])
}

// A long-poll whose client is still connected, or has pipelined its next request, is not
// cancelled by the watch: peeking leaves the bytes for fasthttp.
func TestLongPollWatchKeepsAConnectedAndAPipeliningClient(t *testing.T) {
	ts, b := startRealServerWithBroker(t)
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	// A long-poll, then a pipelined push behind it on the same connection.
	push := `{"items":[{"queue":"pq","transactionId":"x","payload":1}]}`
	_, err = fmt.Fprintf(conn, "GET /api/v1/pop/queue/pq?wait=true&timeout=600 HTTP/1.1\r\nHost: t\r\n\r\n"+
		"POST /api/v1/push HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s", len(push), push)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	start := time.Now()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !bytes.Contains(got.Bytes(), []byte("HTTP/1.1 201")) {
		n, err := conn.Read(buf)
		require.NoError(t, err, "read so far: %q", got.String())
		got.Write(buf[:n])
	}
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "the long-poll ran to its timeout")
	assert.True(t, bytes.HasPrefix(got.Bytes(), []byte("HTTP/1.1 204")), "the long-poll answered 204 first: %q", got.String())
}

func requireJSONStatus(t *testing.T, r response, status int) {
	t.Helper()
	require.Equal(t, status, r.status, "body %s", r.body)
}
