package httpapi

import (
	"testing"

	json "github.com/goccy/go-json"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// decodePushSlow is decodePush without the fast path: the reflection decoder alone.
func decodePushSlow(body []byte) ([]broker.PushItem, string) {
	var req pushBody
	if err := json.UnmarshalOf(body, &req); err != nil {
		return nil, decodeError(err, pushTypeMessage)
	}
	if req.Items == nil {
		return nil, "items array is required"
	}
	return toPushItems(req.Items)
}

func TestDecodePushFastTakesPlainBodiesAndLeavesTheRest(t *testing.T) {
	cases := []struct {
		name string
		body string
		fast bool
	}{
		{"plain items", `{"items":[{"queue":"q","partition":"p","transactionId":"t1","payload":{"a":[1,2.5e3,-0.1,true,false,null,"x\u00e9\n"]}}]}`, true},
		{"traceId and unknown keys", ` { "bufferMs" : 5, "items" : [ {"queue":"q","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","x":{"y":[]},"payload":"s"} ] } `, true},
		{"empty items", `{"items":[]}`, true},
		{"non-ASCII name", `{"items":[{"queue":"fila-ç","payload":1}]}`, true},
		{"escape in a name", `{"items":[{"queue":"q\"x","payload":1}]}`, false},
		{"null payload", `{"items":[{"queue":"q","payload":null}]}`, false},
		{"null queue", `{"items":[{"queue":null}]}`, false},
		{"number queue", `{"items":[{"queue":1}]}`, false},
		{"key in another case", `{"items":[{"Queue":"q"}]}`, false},
		{"Items in another case", `{"Items":[{"queue":"q"}]}`, false},
		{"duplicate key", `{"items":[{"queue":"q","queue":"r"}]}`, false},
		{"missing items", `{"other":1}`, false},
		{"items not an array", `{"items":{}}`, false},
		{"item not an object", `{"items":[1]}`, false},
		{"trailing bytes", `{"items":[]}x`, false},
		{"bad number", `{"items":[{"queue":"q","payload":01}]}`, false},
		{"bad escape in payload", `{"items":[{"queue":"q","payload":"\x"}]}`, false},
		{"invalid UTF-8 in payload", "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xff\"}]}", false},
		{"control character in payload", "{\"items\":[{\"queue\":\"q\",\"payload\":\"a\tb\"}]}", false},
		{"truncated", `{"items":[{"queue":"q"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ok := decodePushFast([]byte(c.body))
			require.Equal(t, c.fast, ok)
			gotItems, gotMsg := decodePush([]byte(c.body))
			wantItems, wantMsg := decodePushSlow([]byte(c.body))
			require.Equal(t, wantMsg, gotMsg, "the same answer as the reflection decoder")
			require.Equal(t, normalise(wantItems), normalise(gotItems))
		})
	}
}

func TestDecodePushFastCopiesOutOfTheRequestBuffer(t *testing.T) {
	body := []byte(`{"items":[{"queue":"q","partition":"p","transactionId":"t1","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","payload":{"a":1}},{"queue":"q","partition":"p","transactionId":"t2","payload":[2]}]}`)
	items, msg := decodePush(body)
	require.Empty(t, msg)
	for i := range body {
		body[i] = 'X' // fasthttp reuses the buffer once the handler returns
	}
	require.Equal(t, []broker.PushItem{
		{Queue: "q", Partition: "p", TransactionID: "t1", TraceID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", Payload: []byte(`{"a":1}`)},
		{Queue: "q", Partition: "p", TransactionID: "t2", Payload: []byte(`[2]`)},
	}, items)
}

// normalise maps a nil payload to an empty one so both decoders compare on content.
func normalise(items []broker.PushItem) []broker.PushItem {
	if items == nil {
		return nil
	}
	out := make([]broker.PushItem, len(items))
	for i, it := range items {
		if it.Payload == nil {
			it.Payload = []byte{}
		}
		out[i] = it
	}
	return out
}

// FuzzDecodePushFastMatchesFallback: whenever the fast path accepts a body, the reflection
// decoder accepts it too and yields the same items, and the verdicts of decodePush and the
// reflection decoder alone agree on every input.
func FuzzDecodePushFastMatchesFallback(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"queue":"q","partition":"p","transactionId":"t","payload":{"a":[1,-2.5E+3,"\u00e9"]}}]}`,
		`{"items":[{"queue":"q","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","payload":"x","extra":[{}]}]}`,
		`{"items":[]}`, `{"items":[{"queue":""}]}`, `{"items":[{"queue":"a/b","payload":0}]}`,
		`{"items":[{"queue":"q","payload":1e400}]}`, `{"items":[{"queue":"q","payload":"\ud800"}]}`,
		`{"items":[{"QUEUE":"q"}]}`, `{"items":[{"queue":"q","payload":{"a":1,"a":2}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := decodePushFast(append([]byte(nil), body...))
		slowItems, slowMsg := decodePushSlow(append([]byte(nil), body...))
		gotItems, gotMsg := decodePush(append([]byte(nil), body...))
		require.Equal(t, slowMsg, gotMsg, "%q", body)
		require.Equal(t, normalise(slowItems), normalise(gotItems), "%q", body)
		if ok {
			var req pushBody
			require.NoError(t, json.UnmarshalOf(body, &req), "fast path accepted what the fallback rejects: %q", body)
			require.Len(t, fast, len(req.Items))
		}
	})
}

func BenchmarkDecodePush100Fallback(b *testing.B) {
	body := pushBody100()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, msg := decodePushSlow(body); msg != "" {
			b.Fatal(msg)
		}
	}
}
