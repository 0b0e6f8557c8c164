package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// pushScratchSeeds are bodies whose pooled decode must equal decodePush's, in an order where a
// body with fewer items or fewer fields follows one with more (stale elements would show).
var pushScratchSeeds = []string{
	`{"items":[{"queue":"q","partition":"p","transactionId":"t1","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","payload":{"a":1}},{"queue":"q2","payload":[1]}]}`,
	`{"items":[{"queue":"q"}]}`,
	`{"items":[]}`,
	`{}`,
	`{"items":null}`,
	`{"items":[{"queue":"q","payload":{"a" 1}}]}`,
	`{"items":[{"payload":1}]}`,
	`{"items":[{}]}`,
	`{"items":[{"queue":"q","transactionId":"t2"},{"queue":1}]}`,
	`{"items":[{"queue":"q","partition":"x"}]} x`,
	`{"items":[{"queue":"q3"}]}`,
}

// TestPushScratchDecodesAsDecodePush: one scratch reused over the seeds (released between
// bodies, as the handler does) answers every body exactly as a fresh decode does: the same items,
// field for field, or the same 400 message; an absent "items" stays a 400 after a body that
// filled the pooled slice.
func TestPushScratchDecodesAsDecodePush(t *testing.T) {
	for round := 0; round < 2; round++ {
		for _, s := range pushScratchSeeds {
			wantItems, wantMsg := decodePush([]byte(s))
			sc := getPushScratch()
			gotItems, gotMsg := sc.decode([]byte(s))
			require.Equal(t, wantMsg, gotMsg, "body %s", s)
			require.Equal(t, wantItems, gotItems, "body %s", s)
			sc.release()
		}
	}
	_, msg := decodePush([]byte(`{}`))
	require.Equal(t, "items array is required", msg)
}

// TestPushScratchReleaseDropsReferences: a released scratch holds no payload or string of the
// request it served (a pooled scratch must not pin a request's bytes).
func TestPushScratchReleaseDropsReferences(t *testing.T) {
	sc := &pushScratch{}
	items, msg := sc.decode([]byte(`{"items":[{"queue":"q","transactionId":"t","payload":{"a":1}}]}`))
	require.Empty(t, msg)
	require.Len(t, items, 1)
	sc.release()
	for _, it := range sc.req.Items[:cap(sc.req.Items)] {
		require.Equal(t, pushItemJSON{}, it)
	}
	for _, it := range sc.items[:cap(sc.items)] {
		require.Zero(t, it.Queue)
		require.Nil(t, it.Payload)
	}
}

// FuzzPushScratch: whatever the body, the pooled decode (one scratch reused across the fuzzer's
// inputs) answers as decodePush does.
func FuzzPushScratch(f *testing.F) {
	for _, s := range pushScratchSeeds {
		f.Add([]byte(s))
	}
	sc := getPushScratch()
	f.Fuzz(func(t *testing.T, body []byte) {
		wantItems, wantMsg := decodePush(body)
		gotItems, gotMsg := sc.decode(body)
		require.Equal(t, wantMsg, gotMsg)
		require.Equal(t, wantItems, gotItems)
		sc.release()
		sc = getPushScratch()
	})
}
