package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 25: a pop naming a queue that does not exist still answers a bodiless 204 (Queen's
// answer; its JS consumer stops on a 4xx), with a header saying so; a queue that exists but is
// empty gets no header.
func TestPopOnAMissingQueueSaysSoInAHeader(t *testing.T) {
	fake := newFake()
	fake.missingQueues = map[string]bool{"ordres": true}
	ts := startServer(t, fake, Config{})
	r := ts.do("GET", "/api/v1/pop/queue/ordres?consumerGroup=g", "")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.body)
	require.Equal(t, queueMissingNote, r.header.Get(HeaderQueueMissing))
	r = ts.do("GET", "/api/v1/pop/queue/ordres/partition/p1", "")
	require.Equal(t, 204, r.status)
	require.Equal(t, queueMissingNote, r.header.Get(HeaderQueueMissing), "the targeted pop too")

	r = ts.do("GET", "/api/v1/pop/queue/orders?consumerGroup=g", "")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.header.Get(HeaderQueueMissing), "an empty queue that exists")
	r = ts.do("GET", "/api/v1/pop?namespace=ns", "")
	require.Equal(t, 204, r.status)
	require.Empty(t, r.header.Get(HeaderQueueMissing), "a discovery pop names no queue")
}

// Against the real broker: the header is there before the queue exists and gone once a push
// made it; a long-poll parked on the missing queue is woken by that first push (a consumer that
// starts before its producer), so parking on a missing queue is right, as in Queen.
func TestPopParkedOnAMissingQueueIsWokenByTheFirstPush(t *testing.T) {
	ts := startRealServer(t)
	r := ts.do("GET", "/api/v1/pop/queue/later?consumerGroup=g", "")
	require.Equal(t, 204, r.status)
	require.Equal(t, queueMissingNote, r.header.Get(HeaderQueueMissing))

	got := make(chan response, 1)
	go func() { got <- ts.do("GET", "/api/v1/pop/queue/later?consumerGroup=g&wait=true&timeout=30000", "") }()
	// One push, 200 ms in (most likely after the pop parked). Had it landed first, the pop
	// finds the message at once: the answer is the same, so the test assumes no ordering.
	deadline := time.After(25 * time.Second)
	for i := 0; ; i++ {
		select {
		case r := <-got:
			require.Equal(t, 200, r.status, "%s", r.body)
			require.Contains(t, string(r.body), `"queue":"later"`)
			require.Empty(t, r.header.Get(HeaderQueueMissing))
			return
		case <-deadline:
			t.Fatal("the parked pop was not woken by the push that created its queue")
		case <-time.After(200 * time.Millisecond):
			if i == 0 {
				pr := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"later","partition":"p","transactionId":"t1","payload":{}}]}`)
				require.Equal(t, 201, pr.status, "%s", pr.body)
			}
		}
	}
}
